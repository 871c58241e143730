import { spawn, type ChildProcess } from 'node:child_process'
import { readdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { BIN } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'

/** Start `toolstorm proxy --target TARGET --record FILE`; resolves with its URL once it listens. */
async function startRecorder(target: string, file: string): Promise<{ child: ChildProcess; url: string; exited: Promise<number | null>; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN, 'proxy', '--target', target, '--port', '0', '--admin-port', '0', '--record', file], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk
      const match = /^toolstorm proxy (\S+) /.exec(stdout)
      if (match) resolve(match[1] as string)
    })
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)))
  })
  return { child, url, exited, stderr: () => stderr }
}

/** Load the cassette once it holds at least `n` exchanges (snapshots come about once a second). */
async function waitForExchanges(file: string, n: number): Promise<Cassette> {
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    const cassette = await Cassette.load(file).catch(() => null)
    if (cassette && cassette.exchanges.length >= n) return cassette
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`no cassette with ${n} exchanges in ${file}`)
}

describe('recording durability', { timeout: 120_000 }, () => {
  it('leaves a complete cassette when the recorder is killed with SIGKILL mid-recording', async ({ dir, upstream }) => {
    const file = path.join(dir, 'killed.cassette.jsonl')
    const recorder = await startRecorder(upstream.url, file)
    for (let i = 0; i < 5; i++) await (await fetch(`${recorder.url}/items/${i}`)).text()
    await waitForExchanges(file, 5)
    // Keep traffic flowing, then kill it in the middle of it.
    let stop = false
    const traffic = (async () => {
      for (let i = 0; !stop; i++) await fetch(`${recorder.url}/items/k${i}`).then((r) => r.text()).catch(() => undefined)
    })()
    await new Promise((resolve) => setTimeout(resolve, 1500))
    recorder.child.kill('SIGKILL')
    await recorder.exited
    stop = true
    await traffic
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges.length).toBeGreaterThanOrEqual(5)
    expect(cassette.exchanges.slice(0, 5).map((e) => e.request.url)).toEqual(['/items/0', '/items/1', '/items/2', '/items/3', '/items/4'])
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600')
  })

  it('writes every exchange on SIGTERM, and removes its journal', async ({ dir, upstream }) => {
    const file = path.join(dir, 'stopped.cassette.jsonl')
    const recorder = await startRecorder(upstream.url, file)
    for (let i = 0; i < 7; i++) await (await fetch(`${recorder.url}/items/${i}`)).text()
    recorder.child.kill('SIGTERM')
    expect(await recorder.exited).toBe(0)
    expect(recorder.stderr()).toContain(`cassette written to ${file} (7 exchanges)`)
    expect((await Cassette.load(file)).exchanges).toHaveLength(7)
    expect((await readdir(dir)).filter((name) => name.includes('stopped') && name !== 'stopped.cassette.jsonl')).toEqual([])
  })

  it('leaves an existing cassette untouched when recording cannot start', async ({ dir, upstream }) => {
    const file = path.join(dir, 'kept.cassette.jsonl')
    await writeFile(file, 'previous content\n')
    const blocker = await startRecorder(upstream.url, path.join(dir, 'blocker.cassette.jsonl'))
    const port = new URL(blocker.url).port
    const child = spawn(process.execPath, [BIN, 'proxy', '--target', upstream.url, '--port', port, '--admin-port', '0', '--record', file], { stdio: 'ignore' })
    expect(await new Promise((resolve) => child.once('exit', resolve))).not.toBe(0)
    expect(await readFile(file, 'utf8')).toBe('previous content\n')
    blocker.child.kill('SIGTERM')
    await blocker.exited
  })
})
