/**
 * Programs that start toolstorm (the pytest plugin) learn its URLs and token from one JSON line
 * or a file, never from the human banner; a cassette the plugin records stores paths, so it
 * replays against a fake server on another port; the replay verdict carries its table.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { BIN } from '../helpers/cli.js'
import { closingChild } from '../helpers/teardown.js'
import { test as it } from '../helpers/file-fixtures.js'

interface Ready {
  ready: true
  command: string
  mode: string
  url: string
  port: number
  adminUrl: string
  adminPort: number
  token: string
  pid: number
  ca: string | null
  cassette?: { file: string; mode: string; exchanges?: number }
}

/** Start the CLI with its CA under `dir`; resolves with its first stdout line, parsed. Killed when the case ends, if it still runs. */
function startReady(dir: string, args: string[]): { child: ChildProcess; ready: Promise<Ready>; exited: Promise<number | null>; stderr: () => string } {
  const child = closingChild(spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TOOLSTORM_CA_DIR: path.join(dir, 'ca') } }))
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk))
  const ready = new Promise<Ready>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk
      const newline = stdout.indexOf('\n')
      if (newline !== -1) resolve(JSON.parse(stdout.slice(0, newline)) as Ready)
    })
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)))
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, ready, exited, stderr: () => stderr }
}

const admin = (ready: Ready, route: string, init: RequestInit = {}) => fetch(ready.adminUrl + route, { ...init, headers: { authorization: `Bearer ${ready.token}`, ...(init.headers as Record<string, string>) } })

describe('the ready signal', () => {
  it('--ready-json: one JSON line first on stdout with the URLs, ports and token; the banner goes to stderr', async ({ dir }) => {
    const proc = startReady(dir, ['proxy', '--port', '0', '--admin-port', '0', '--ready-json'])
    const ready = await proc.ready
    expect(ready).toMatchObject({ ready: true, command: 'proxy', mode: 'forward', pid: proc.child.pid, ca: path.join(dir, 'ca', 'ca.pem') })
    expect(ready.url).toBe(`http://127.0.0.1:${ready.port}`)
    expect(ready.adminUrl).toBe(`http://127.0.0.1:${ready.adminPort}`)
    expect((await admin(ready, '/report')).status).toBe(200)
    expect(proc.stderr()).toContain(`toolstorm proxy ${ready.url} (forward mode`)
    proc.child.kill('SIGTERM')
    expect(await proc.exited).toBe(0)
  })

  it('--ready-file: the same JSON, written atomically and owner-only once the servers listen', async ({ dir, upstream }) => {
    const file = path.join(dir, 'ready', 'proxy.json')
    const proc = startReady(dir, ['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--ready-file', file, '--ready-json'])
    const line = await proc.ready
    const written = JSON.parse(await readFile(file, 'utf8')) as Ready
    expect(written).toEqual(line)
    expect(written.mode).toBe('reverse')
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600')
    expect((await fetch(`${written.url}/items/a`)).status).toBe(200)
    proc.child.kill('SIGTERM')
    expect(await proc.exited).toBe(0)
  })

  it('record --url-form origin stores paths, so the cassette replays whatever port the fake server is on; the verdict has its table', async ({ dir, upstream }) => {
    const cassette = path.join(dir, 'origin.jsonl')
    const recording = startReady(dir, ['record', cassette, '--port', '0', '--admin-port', '0', '--url-form', 'origin', '--ready-json'])
    const recorder = await recording.ready
    expect(recorder).toMatchObject({ command: 'record', cassette: { file: cassette, mode: 'record' } })
    expect((await fetch(`${recorder.url}/_run/t1/http/127.0.0.1:${upstream.port}/items/a`)).status).toBe(200)
    recording.child.kill('SIGTERM')
    expect(await recording.exited).toBe(0)
    const lines = (await readFile(cassette, 'utf8')).trim().split('\n')
    expect((JSON.parse(lines[1]!) as { request: { url: string } }).request.url).toBe('/items/a')

    const replaying = startReady(dir, ['replay', cassette, '--port', '0', '--admin-port', '0', '--ready-json'])
    const replay = await replaying.ready
    expect(replay).toMatchObject({ command: 'replay', cassette: { file: cassette, mode: 'replay', exchanges: 1 } })
    // Another port, no server there: the cassette answers.
    const answer = await fetch(`${replay.url}/_run/t2/http/127.0.0.1:9/items/a`)
    expect(answer.status).toBe(200)
    expect(((await answer.json()) as { id: string }).id).toBe('a')
    expect((await fetch(`${replay.url}/_run/t2/http/127.0.0.1:9/items/b`)).status).toBe(422)
    const verdict = (await (await admin(replay, '/verdict')).json()) as { passed: boolean; code: string; table: string; rows: unknown[] }
    expect(verdict).toMatchObject({ passed: false, code: 'ERR_CASSETTE_EXTRA' })
    expect(verdict.rows).toHaveLength(2)
    // The cassette stores paths, so the seen column shows the path too (comparable with expected).
    expect(verdict.table).toMatch(/GET \/items\/b +extra/)
    expect(((await (await admin(replay, '/report?run=t2')).json()) as { calls: unknown[] }).calls).toHaveLength(2)
    replaying.child.kill('SIGTERM')
    expect(await replaying.exited).toBe(1)
  })
})
