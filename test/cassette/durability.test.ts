import { spawn } from 'node:child_process'
import { readdir, readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { BIN, runCli } from '../helpers/cli.js'
import { startCliProxy } from '../helpers/cli-proxy.js'
import { test as it } from '../helpers/file-fixtures.js'

/** Start `toolstorm proxy --target TARGET --record FILE`; resolves with its URL once it listens. */
const startRecorder = (target: string, file: string, extra: string[] = []) => startCliProxy(['--target', target, '--record', file, ...extra])

/** Load the cassette once it holds at least `n` exchanges (snapshots come about once a second). */
async function waitForExchanges(file: string, n: number): Promise<Cassette> {
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    const cassette = await Cassette.load(file).catch(() => null)
    if (cassette && cassette.exchanges.length >= n) return cassette
    await new Promise((resolve) => setTimeout(resolve, 25))
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
    let answered = 0
    const traffic = (async () => {
      for (let i = 0; !stop; i++) await fetch(`${recorder.url}/items/k${i}`).then(async (r) => (await r.text(), answered++)).catch(() => undefined)
    })()
    await expect.poll(() => answered, { timeout: 10_000, interval: 10 }).toBeGreaterThanOrEqual(20)
    recorder.child.kill('SIGKILL')
    await recorder.exited
    stop = true
    await traffic
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges.length).toBeGreaterThanOrEqual(5)
    expect(cassette.exchanges.slice(0, 5).map((e) => e.request.url)).toEqual(['/items/0', '/items/1', '/items/2', '/items/3', '/items/4'])
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600')
  })

  it('writes every exchange on SIGTERM, and leaves no other file beside the cassette', async ({ dir, upstream }) => {
    const file = path.join(dir, 'stopped.cassette.jsonl')
    const recorder = await startRecorder(upstream.url, file)
    for (let i = 0; i < 7; i++) await (await fetch(`${recorder.url}/items/${i}`)).text()
    recorder.child.kill('SIGTERM')
    expect(await recorder.exited).toBe(0)
    expect(recorder.stderr()).toContain(`cassette written to ${file} (7 exchanges)`)
    expect((await Cassette.load(file)).exchanges).toHaveLength(7)
    expect((await readdir(dir)).filter((name) => name.includes('stopped') && name !== 'stopped.cassette.jsonl')).toEqual([])
  })

  it('exits 2 at SIGTERM naming the file it could not write, and leaves a cassette of the exchanges before it that still loads', async ({ dir, upstream }) => {
    const file = path.join(dir, 'blocked.cassette.jsonl')
    // A file where the body files' folder goes: the large body cannot be stored, as on a full disk.
    await writeFile(path.join(dir, 'blocked.cassette.bodies'), 'in the way')
    const recorder = await startRecorder(upstream.url, file)
    for (const url of ['/items/a', '/bytes/200000', '/items/b']) await (await fetch(`${recorder.url}${url}`)).arrayBuffer()
    recorder.child.kill('SIGTERM')
    expect(await recorder.exited).toBe(2)
    // The typed error, not a crash with a stack trace.
    expect(recorder.stderr()).toContain(`[toolstorm] Failed to write the body file ${path.join(dir, 'blocked.cassette.bodies')}/sha256-`)
    expect(recorder.stderr()).toContain('(ERR_FILE_UNWRITABLE)')
    expect(recorder.stderr()).not.toMatch(/^\s+at /m)
    // No later exchange was appended after the one that failed: no hole, so the cassette loads.
    expect((await Cassette.load(file)).exchanges.map((exchange) => exchange.request.url)).toEqual(['/items/a'])
  })

  it('exits 2 at SIGTERM naming the report it could not write', async ({ dir, upstream }) => {
    await writeFile(path.join(dir, 'not-a-folder'), '')
    const report = path.join(dir, 'not-a-folder', 'report.json')
    const proxy = await startCliProxy(['--target', upstream.url, '--report', report])
    await (await fetch(`${proxy.url}/items/a`)).text()
    proxy.child.kill('SIGTERM')
    expect(await proxy.exited).toBe(2)
    expect(proxy.stderr()).toContain(`[toolstorm] Failed to write the report ${report}: `)
    expect(proxy.stderr()).toContain('(ERR_FILE_UNWRITABLE)')
    expect(proxy.stderr()).not.toMatch(/^\s+at /m)
  })

  it('appends a restarted recorder to the cassette a kill -9 left, as its next segment, losing nothing written before the kill', async ({ dir, upstream }) => {
    const file = path.join(dir, 'restarted.cassette.jsonl')
    const first = await startRecorder(upstream.url, file)
    for (let i = 0; i < 30; i++) await (await fetch(`${first.url}/items/a${i}`)).text()
    await waitForExchanges(file, 10)
    // These come after the file was last seen whole: before the fix they lived only in a journal beside it.
    for (let i = 0; i < 20; i++) await (await fetch(`${first.url}/items/b${i}`)).text()
    // Once they are written into the file (a kill -9 must not take them back).
    await waitForExchanges(file, 50)
    first.child.kill('SIGKILL')
    await first.exited
    // A supervisor restarts the same command.
    const second = await startRecorder(upstream.url, file)
    for (let i = 0; i < 4; i++) await (await fetch(`${second.url}/items/c${i}`)).text()
    second.child.kill('SIGTERM')
    expect(await second.exited).toBe(0)
    expect(second.stderr()).toContain(`appending to the cassette ${file} (50 exchanges already recorded) as segment 2; --overwrite replaces it instead`)
    const cassette = await Cassette.load(file)
    const urls = cassette.exchanges.map((exchange) => exchange.request.url)
    expect(urls).toEqual([...Array.from({ length: 30 }, (_, i) => `/items/a${i}`), ...Array.from({ length: 20 }, (_, i) => `/items/b${i}`), ...Array.from({ length: 4 }, (_, i) => `/items/c${i}`)])
    expect(cassette.segments.map(({ exchanges, ended }) => ({ exchanges, ended }))).toEqual([{ exchanges: 50, ended: false }, { exchanges: 4, ended: true }])
    const inspected = await runCli(['inspect', file])
    expect(inspected.code).toBe(0)
    expect(inspected.stdout).toContain('segments: 2 (recordings appended to one another')
    expect(inspected.stdout).toContain('segments without an end line: 1 (still recording, or stopped by a kill -9 or a crash')
  })

  it('replaces an existing cassette only with --overwrite, and says so', async ({ dir, upstream }) => {
    const file = path.join(dir, 'overwritten.cassette.jsonl')
    const first = await startRecorder(upstream.url, file)
    for (let i = 0; i < 3; i++) await (await fetch(`${first.url}/items/a${i}`)).text()
    first.child.kill('SIGTERM')
    await first.exited
    const second = await startRecorder(upstream.url, file, ['--overwrite'])
    await (await fetch(`${second.url}/items/b0`)).text()
    second.child.kill('SIGTERM')
    await second.exited
    expect(second.stderr()).toContain(`replacing the cassette ${file} (3 exchanges) because of --overwrite`)
    expect((await Cassette.load(file)).exchanges.map((exchange) => exchange.request.url)).toEqual(['/items/b0'])
  })

  it('refuses to record over a file that is not a cassette, naming it, unless --overwrite', async ({ dir, upstream }) => {
    const file = path.join(dir, 'notes.jsonl')
    await writeFile(file, '{"my":"notes"}\n')
    const child = spawn(process.execPath, [BIN, 'proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--record', file], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk))
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(2)
    expect(stderr).toContain(`Failed to record into ${file}: it exists and is not a toolstorm cassette (line 1:`)
    expect(stderr).toContain('--overwrite')
    expect(await readFile(file, 'utf8')).toBe('{"my":"notes"}\n')
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
