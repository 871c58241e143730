/**
 * `toolstorm proxy --state` and `toolstorm report --state`: replicas as separate processes on one
 * real Redis, a replica killed with SIGKILL mid-run, and the merged report read by check and inspect.
 */
import { spawn } from 'node:child_process'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, vi } from 'vitest'
import type { Report } from '../../src/engine/schema/report.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { BIN, runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'
import { createTestCa } from '../helpers/test-ca.js'
import { freePort, hasRedis, startRedis } from '../helpers/redis-server.js'
import { closing, closingChild } from '../helpers/teardown.js'
import { BYTES, type Upstream } from '../helpers/upstream.js'
import { bodiesFolderFor } from '../../src/cassette/format/body-files.js'

interface Replica {
  readonly url: string
  readonly child: ReturnType<typeof spawn>
  stderr(): string
}

/** Start a replica of `target` (killed when the case ends, if it still runs); resolves with its data-plane URL once it printed where it listens. */
function replica(target: string, args: string[]): Promise<Replica> {
  const child = closingChild(spawn(process.execPath, [BIN, 'proxy', '--target', target, '--port', '0', '--admin-port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'] }))
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (c: Buffer) => (stderr += c))
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (c: Buffer) => {
      stdout += c
      const url = /^toolstorm proxy (http:\/\/127\.0\.0\.1:\d+) /m.exec(stdout)?.[1]
      if (url) resolve({ url, child, stderr: () => stderr })
    })
    child.once('exit', (code) => reject(new Error(`replica exited ${code}: ${stderr}`)))
  })
}

/**
 * Two replicas on `state` share run `run`: calls alternated over them meet the rule on the run's
 * second call, and `toolstorm report` reads the run back.
 */
async function shareRunAcrossTwoReplicas({ dir, upstream }: { dir: string; upstream: Upstream }, state: string[], run: string): Promise<[Replica, Replica]> {
  const rules = path.join(dir, `${run}-rules.json`)
  await writeFile(rules, JSON.stringify({ rules: [{ name: 'second', route: 'GET /items/*', kind: 'unavailable', calls: [2] }] }))
  const a = await replica(upstream.url, [...state, '--rules', rules])
  const b = await replica(upstream.url, state)
  const statuses: number[] = []
  for (const proxy of [a, b, a]) statuses.push((await fetch(`${proxy.url}/items/${run}`, { headers: { 'x-toolstorm-run': run } })).status)
  expect(statuses).toEqual([200, 503, 200])
  // A finished call is written just after its answer: read again until the last one is in.
  await vi.waitFor(
    async () => {
      const report = await runCli(['report', ...state, '--run', run])
      expect(report.code).toBe(0)
      expect((JSON.parse(report.stdout) as Report).calls.map((call) => [call.id, call.status])).toEqual([[1, 200], [2, 503], [3, 200]])
    },
    { timeout: 20_000, interval: 50 },
  )
  return [a, b]
}

describe.skipIf(!hasRedis)('toolstorm proxy --state', () => {
  it('exits 2 naming the URL (without its password) when Redis is unreachable at start', async ({ upstream }) => {
    const port = await freePort()
    const result = await runCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--state', `redis://:hunter2@127.0.0.1:${port}`])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`Failed to reach the state store redis://***@127.0.0.1:${port} at start: ECONNREFUSED. Start Redis there, or fix --state.`)
    expect(result.stderr).toContain('(ERR_STATE_UNAVAILABLE)')
    expect(result.stderr).not.toContain('hunter2')
  })

  it('exits 2 on a --state that is not a Redis URL', async ({ dir, upstream }) => {
    const result = await runCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--state', 'http://127.0.0.1:6379'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('Failed to read --state: "http://127.0.0.1:6379" uses http; expected redis://HOST:PORT[/DB], rediss://HOST:PORT[/DB] or unix:///path/to/redis.sock[?db=N].')
    const prefix = await runCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--state-prefix', 'suite-a'])
    expect(prefix.code).toBe(2)
    expect(prefix.stderr).toContain('Failed to read --state-prefix: it needs --state (the Redis the runs are shared through).')
    const virtual = await runCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--state', 'redis://127.0.0.1:1', '--clock', 'virtual'])
    expect(virtual.code).toBe(2)
    expect(virtual.stderr).toContain("Failed to start the proxy: --clock virtual with --state is not supported (replicas share Redis's clock).")
    const recording = await runCli(['record', path.join(dir, 'never.cassette.jsonl'), '--target', upstream.url, '--port', '0', '--admin-port', '0', '--state', 'redis://127.0.0.1:1', '--clock', 'virtual'])
    expect(recording.code).toBe(2)
    expect(recording.stderr).toContain("Failed to start recording: --clock virtual with --state is not supported (replicas share Redis's clock).")
    const caAlone = await runCli(['report', '--state-ca', path.join(dir, 'none.pem')])
    expect(caAlone.code).toBe(2)
    expect(caAlone.stderr).toContain('Failed to read --state-ca: it needs --state rediss://… (the Redis the runs are shared through, over TLS).')
  })

  it('merges 2 replica processes into one report, keeps a killed replica\'s finished calls, and check and inspect accept it', async ({ dir, upstream }) => {
    const redis = closing(await startRedis())
    const rules = path.join(dir, 'rules.json')
    await writeFile(rules, JSON.stringify({ seed: 3, rules: [{ name: 'second-item', route: 'GET /items/*', kind: 'unavailable', calls: [2] }] }))
    const state = ['--state', redis.url, '--state-prefix', 'cli']
    const saved = path.join(dir, 'on-exit.json')
    const a = await replica(upstream.url, [...state, '--rules', rules, '--report', saved])
    // Started without rules: it serves the shared ones.
    const b = await replica(upstream.url, state)
    const statuses: number[] = []
    for (const proxy of [a, b, a, b]) statuses.push((await fetch(`${proxy.url}/items/x`, { headers: { 'x-toolstorm-run': 'cli-run' } })).status)
    expect(statuses).toEqual([200, 503, 200, 200])
    await new Promise((resolve) => setTimeout(resolve, 100))
    b.child.kill('SIGKILL')

    const report = await runCli(['report', ...state, '--run', 'cli-run'])
    expect(report.code).toBe(0)
    const merged = JSON.parse(report.stdout) as Report
    expect(merged.calls.map((call) => [call.id, call.ordinal, call.status, call.fault])).toEqual([
      [1, 1, 200, null],
      [2, 2, 503, 'second-item'],
      [3, 3, 200, null],
      [4, 4, 200, null],
    ])
    expect(merged.coverage).toEqual({ 'second-item': { eligible: 1, selected: 1, triggered: 1 } })
    const file = path.join(dir, 'merged.json')
    await writeFile(file, report.stdout)
    const check = await runCli(['check', file])
    expect(check.stdout).toContain('PASS')
    expect(check.code).toBe(0)
    const inspect = await runCli(['inspect', file])
    expect(inspect.code).toBe(0)
    expect(inspect.stdout).toContain('Valid report v1 (run cli-run): 4 calls, 0 effects')

    // A replica's --report on shutdown holds the merged run too.
    const exited = new Promise((resolve) => a.child.once('exit', resolve))
    a.child.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect((JSON.parse(await readFile(saved, 'utf8')) as Report).calls).toHaveLength(4)

    const missing = await runCli(['report', ...state, '--run', 'nope'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('Failed to read the report: no run "nope"')
  })

  it('records one cassette from replica processes (--record with --state): toolstorm record, report --cassette and a replica\'s file hold every exchange in call order, and it replays strictly', async ({ dir, upstream }) => {
    const redis = closing(await startRedis())
    const rules = path.join(dir, 'tape-rules.json')
    await writeFile(rules, JSON.stringify({ seed: 3, rules: [{ name: 'second-item', route: 'GET /items/*', kind: 'unavailable', calls: [2] }] }))
    const state = ['--state', redis.url, '--state-prefix', 'tape']
    const fileA = path.join(dir, 'a.cassette.jsonl')
    const a = await replica(upstream.url, [...state, '--rules', rules, '--record', fileA])
    const b = await replica(upstream.url, [...state, '--record', path.join(dir, 'b.cassette.jsonl')])
    const headers = { 'x-toolstorm-run': 'tape' }
    const statuses: number[] = []
    for (const proxy of [a, b, a, b]) statuses.push((await fetch(`${proxy.url}/items/x`, { headers })).status)
    expect(statuses).toEqual([200, 503, 200, 200])
    // A third replica is toolstorm record around a command: the command's calls go through it and through replica A.
    const script = `for (const url of [process.env.TOOLSTORM_PROXY_URL, process.env.VIA_A]) { const r = await fetch(url + '/items/x', { headers: { 'x-toolstorm-run': 'tape' } }); await r.arrayBuffer(); console.log(r.status) }`
    const fileC = path.join(dir, 'c.cassette.jsonl')
    const recorded = await runCli(['record', fileC, '--target', upstream.url, '--port', '0', '--admin-port', '0', ...state, '--', process.execPath, '--input-type=module', '-e', script], { env: { VIA_A: a.url } })
    expect(recorded.stderr).toContain(`cassette written to ${fileC}`)
    expect(recorded.code).toBe(0)
    expect(recorded.stdout.trim().split('\n')).toEqual(['200', '200'])
    const order = (cassette: Cassette) => cassette.exchanges.map((exchange) => [exchange.seq, exchange.call, exchange.ordinal, exchange.response?.status, exchange.fault?.rule ?? null])
    const expected = [
      [1, 1, 1, 200, null],
      [2, 2, 2, 503, 'second-item'],
      [3, 3, 3, 200, null],
      [4, 4, 4, 200, null],
      [5, 5, 5, 200, null],
      [6, 6, 6, 200, null],
    ]
    // The recording command's own file holds the whole run, though it served 1 call of 6.
    expect(order(await Cassette.load(fileC))).toEqual(expected)

    const out = path.join(dir, 'tape.cassette.jsonl')
    const assembled = await runCli(['report', ...state, '--run', 'tape', '--cassette', out])
    expect(assembled.stderr).toContain(`cassette written to ${out} (6 exchanges from every replica)`)
    expect(assembled.code).toBe(0)
    const cassette = await Cassette.load(out)
    expect(order(cassette)).toEqual(expected)
    const replay = await startReplayServer(cassette)
    try {
      const replayed: number[] = []
      for (let i = 0; i < 6; i++) replayed.push((await fetch(`${replay.url}/items/x`, { headers })).status)
      expect(replayed).toEqual([200, 503, 200, 200, 200, 200])
      expect(replay.verdict()).toMatchObject({ passed: true, served: 6, unused: 0 })
    } finally {
      await replay.close()
    }

    // A replica stopped writes its --record file with every replica's exchanges of the runs it served.
    const exited = new Promise((resolve) => a.child.once('exit', resolve))
    a.child.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect(order(await Cassette.load(fileA))).toEqual(expected)

    const none = await runCli(['report', '--state', redis.url, '--state-prefix', 'elsewhere', '--cassette', out])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain(`Failed to write the cassette: no replica recorded any run in ${redis.url}. Start the replicas with --record FILE`)
  })

  it('replicas recording through --state keep large bodies in body files, write the same cassette, and say at stop which bodies were cut', async ({ dir, upstream }) => {
    const redis = closing(await startRedis())
    const state = ['--state', redis.url, '--state-prefix', 'bodies', '--body-limit', '200000']
    const [fileA, fileB] = [path.join(dir, 'bodies-a.cassette.jsonl'), path.join(dir, 'bodies-b.cassette.jsonl')]
    const a = await replica(upstream.url, [...state, '--record', fileA])
    const b = await replica(upstream.url, [...state, '--record', fileB])
    const headers = { 'x-toolstorm-run': 'bodies' }
    const whole = Buffer.from(await (await fetch(`${a.url}/bytes/150000`, { headers })).arrayBuffer())
    const cut = Buffer.from(await (await fetch(`${b.url}/bytes/300000`, { headers })).arrayBuffer())
    expect(whole.equals(BYTES.subarray(0, 150_000))).toBe(true)
    expect(cut.equals(BYTES.subarray(0, 300_000))).toBe(true)
    // A replica sends a finished exchange to Redis right after it ends: wait until both are there.
    const out = path.join(dir, 'bodies.cassette.jsonl')
    let written = ''
    while (!written.includes('(2 exchanges from every replica)')) written = (await runCli(['report', ...state.slice(0, 4), '--run', 'bodies', '--cassette', out])).stderr
    expect(written).toContain('1 body was cut at the body limit (200000 bytes): GET /bytes/300000 (1 response).')
    for (const replica of [a, b]) {
      const exited = new Promise((resolve) => replica.child.once('exit', resolve))
      replica.child.kill('SIGTERM')
      expect(await exited).toBe(0)
      // Each replica's file holds every replica's exchanges: both say the cut body, though only B served it.
      expect(replica.stderr()).toContain(
        '1 body was cut at the body limit (200000 bytes): GET /bytes/300000 (1 response). Replay breaks them off and fails unless --allow-truncated; record with --body-limit 300000 to keep them whole.',
      )
    }
    // The same cassette on disk whichever replica (or report --cassette) wrote it: the lines and the body files.
    expect(await readFile(fileB, 'utf8')).toBe(await readFile(fileA, 'utf8'))
    expect(await readFile(out, 'utf8')).toBe(await readFile(fileA, 'utf8'))
    const files = (await readdir(bodiesFolderFor(fileA))).sort()
    expect(files).toHaveLength(2)
    expect((await readdir(bodiesFolderFor(fileB))).sort()).toEqual(files)
    const lines = (await readFile(fileA, 'utf8')).trim().split('\n').filter((line) => line.startsWith('{"seq":')).map((line) => JSON.parse(line) as { response: { body: { file: string } } })
    expect(lines.map((line) => line.response.body.file).sort()).toEqual(files)
    const cassette = await Cassette.load(fileB)
    expect(Buffer.from(cassette.exchanges[0]!.response!.body!.data, 'base64').equals(whole)).toBe(true)
    expect(cassette.exchanges[1]!.response!.body).toMatchObject({ size: 300_000, truncated: true })
  })

  it('shares a run over TLS: rediss:// with --state-ca between replica processes, and exits 2 naming the URL when the CA is not trusted', async ({ dir, upstream }) => {
    const ca = await createTestCa('redis test CA')
    const leaf = await ca.issue(['127.0.0.1', 'localhost'])
    const [certFile, keyFile, caFile] = [path.join(dir, 'redis.pem'), path.join(dir, 'redis-key.pem'), path.join(dir, 'redis-ca.pem')]
    await writeFile(certFile, leaf.cert)
    await writeFile(keyFile, leaf.key, { mode: 0o600 })
    await writeFile(caFile, ca.certPem)
    const redis = closing(await startRedis({ tls: { certFile, keyFile, caFile }, password: 'tls-s3cret' }))
    expect(redis.url).toMatch(/^rediss:\/\//)
    const state = ['--state', redis.url, '--state-ca', caFile, '--state-prefix', 'tls']
    const [a, b] = await shareRunAcrossTwoReplicas({ dir, upstream }, state, 'tls')
    expect(a.stderr() + b.stderr()).not.toContain('tls-s3cret')

    // Without the CA, Redis's certificate is not trusted: exit 2, naming the URL (not the password) and why.
    const untrusted = await runCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--state', redis.url])
    expect(untrusted.code).toBe(2)
    expect(untrusted.stderr).toContain(`Failed to reach the state store rediss://***@127.0.0.1:${redis.port} at start: SELF_SIGNED_CERT_IN_CHAIN.`)
    expect(untrusted.stderr).not.toContain('tls-s3cret')
    const plain = await runCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--state', `redis://127.0.0.1:${redis.port}`, '--state-ca', caFile])
    expect(plain.code).toBe(2)
    expect(plain.stderr).toContain(`Failed to read --state-ca: redis://127.0.0.1:${redis.port} is not a rediss:// URL (TLS); the CA is for Redis over TLS only.`)
  })

  it('shares a run through a unix socket with a password (unix://:PASSWORD@/path) between replica processes', async ({ dir, upstream }) => {
    const socket = path.join(dir, 'redis.sock')
    const redis = closing(await startRedis({ unixSocket: socket, password: 'unix-s3cret' }))
    expect(redis.url).toBe(`unix://:unix-s3cret@${socket}`)
    const state = ['--state', redis.url, '--state-prefix', 'unix']
    await shareRunAcrossTwoReplicas({ dir, upstream }, state, 'unix')
    // A wrong password is refused at start, the URL shown without it.
    const wrong = await runCli(['report', '--state', `unix://:nope@${socket}`, '--run', 'unix'])
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toContain(`unix://***@${socket}`)
    expect(wrong.stderr).not.toContain('nope@')
  })
})
