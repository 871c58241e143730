import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { BIN, ROOT, runCli } from '../helpers/cli.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'

let dir: string
let upstream: Upstream
let rules: string
let agent: string
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-cassette-cli-'))
  upstream = await startUpstream()
  rules = path.join(dir, 'rules.json')
  await writeFile(rules, JSON.stringify({ seed: 7, rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 1 }] }))
  // An agent that retries a 429 once, then ships; it exits with the code given as its argument.
  agent = path.join(dir, 'agent.mjs')
  await writeFile(
    agent,
    `const base = process.env.TOOLSTORM_PROXY_URL
const order = process.argv[3] ?? 'o-1'
let read = await fetch(base + '/items/a')
if (read.status === 429) read = await fetch(base + '/items/a')
const ship = await fetch(base + '/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order }) })
console.log('agent', read.status, ship.status)
process.exit(Number(process.argv[2] ?? 0))
`,
  )
})
afterAll(async () => {
  await upstream.close()
  await rm(dir, { recursive: true, force: true })
})

const server = ['--port', '0', '--admin-port', '0']

/** The agent's cassette, recorded once by the CLI (tests below read it, whichever runs first). */
let agentCassette: Promise<{ file: string; code: number | null; stdout: string; stderr: string }> | null = null
function recordAgent(): Promise<{ file: string; code: number | null; stdout: string; stderr: string }> {
  agentCassette ??= (async () => {
    const file = path.join(dir, 'agent.cassette.jsonl')
    return { file, ...(await runCli(['record', file, '--target', upstream.url, ...server, '--rules', rules, '--', process.execPath, agent, '3'])) }
  })()
  return agentCassette
}

describe('toolstorm record and replay with a command', { timeout: 120_000 }, () => {
  it('records a command\'s traffic and exits with its code, then replays it with no upstream', async () => {
    const recorded = await recordAgent()
    const file = recorded.file
    expect(recorded.code).toBe(3)
    expect(recorded.stdout).toBe('agent 200 201\n')
    expect(recorded.stderr).toContain(`cassette written to ${file} (3 exchanges)`)
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges.map((e) => [e.route, e.response?.status])).toEqual([
      ['GET /items/a', 429],
      ['GET /items/a', 200],
      ['POST /ship', 201],
    ])

    const passed = await runCli(['replay', file, ...server, '--', process.execPath, agent, '0'])
    expect(passed.stdout).toBe('agent 200 201\n')
    expect(passed.stderr).toContain(`Replayed 3 of 3 exchange(s) from ${file}.`)
    expect(passed.code).toBe(0)

    const agentFailed = await runCli(['replay', file, ...server, '--', process.execPath, agent, '4'])
    expect(agentFailed.code).toBe(4)

    const diverged = await runCli(['replay', file, ...server, '--', process.execPath, agent, '0', 'o-2'])
    expect(diverged.stdout).toBe('agent 200 422\n')
    expect(diverged.code).toBe(1)
    expect(diverged.stderr).toContain(`Failed to replay "POST /ship" (request 3): it differs from exchange 3 of ${file} (POST /ship): body differs at $.order: "o-1" ≠ "o-2".`)
    expect(diverged.stderr).toContain('  3  3  POST /ship    POST /ship    mismatch: body differs at $.order: "o-1" ≠ "o-2"\n          closest recorded: exchange 3 (POST /ship, same route): body differs\n          $.order: "o-1" ≠ "o-2"\n')

    const json = await runCli(['replay', file, '--json', ...server, '--', process.execPath, agent, '0', 'o-2'])
    expect(json.code).toBe(1)
    const report = JSON.parse(json.stdout.slice(json.stdout.indexOf('{')))
    expect(report).toMatchObject({ kind: 'toolstorm.replay', passed: false, code: 'ERR_CASSETTE_MISMATCH' })
    expect(report.table[2].diff).toEqual({ position: 3, exchange: 'POST /ship', closeness: 'same route', difference: 'body differs', paths: [{ path: '$.order', expected: '"o-1"', seen: '"o-2"' }], morePaths: 0, bytes: null })
    expect(diverged.stderr).toContain('(ERR_CASSETTE_MISMATCH)')
  })

  it('records in forward mode with HTTP_PROXY set for the command', async () => {
    const file = path.join(dir, 'forward.cassette.jsonl')
    const script = path.join(dir, 'curl-like.mjs')
    await writeFile(script, `import http from 'node:http'
const proxy = new URL(process.env.HTTP_PROXY)
http.get({ host: proxy.hostname, port: proxy.port, path: '${upstream.url}/items/fwd', headers: { host: '${new URL(upstream.url).host}' } }, (res) => { res.resume(); res.on('end', () => process.exit(res.statusCode === 200 ? 0 : 9)) })
`)
    // Forward mode intercepts HTTPS too, with the CA "toolstorm ca" makes: keep it in this test's folder.
    const result = await runCli(['record', file, ...server, '--', process.execPath, script], { env: { TOOLSTORM_CA_DIR: path.join(dir, 'ca') } })
    expect(result.code).toBe(0)
    expect((await Cassette.load(file)).exchanges.map((e) => e.request.url)).toEqual([`${upstream.url}/items/fwd`])
  })

  it("gives the command the proxy's sidecar: a tool server it starts reports its effects there, and check sees them (#36)", async () => {
    const file = path.join(dir, 'effects.cassette.jsonl')
    const script = path.join(dir, 'tool-and-agent.mjs')
    // A tool server configured from the environment (reportEffect, as the docs say) and an agent that ships one order twice, through HTTP_PROXY.
    await writeFile(script, `import http from 'node:http'
import { reportEffect } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/effects/toolstorm-effects.js')).href)}
const tool = http.createServer(async (req, res) => { await reportEffect(req, 'shipment', 'o-1'); res.writeHead(201).end() })
await new Promise((resolve) => tool.listen(0, '127.0.0.1', resolve))
const target = 'http://127.0.0.1:' + tool.address().port
const proxy = new URL(process.env.HTTP_PROXY)
for (let i = 0; i < 2; i++) await new Promise((resolve) => http.request({ host: proxy.hostname, port: proxy.port, method: 'POST', path: target + '/ship', headers: { host: new URL(target).host } }, (res) => res.resume().on('end', resolve)).end())
tool.close()
`)
    const recorded = await runCli(['record', file, ...server, '--', process.execPath, script], { env: { TOOLSTORM_CA_DIR: path.join(dir, 'ca'), TOOLSTORM_SIDECAR: '', TOOLSTORM_ADMIN_TOKEN: '' } })
    expect(recorded.code, recorded.stderr).toBe(0)
    expect(recorded.stderr).not.toContain('could not report')
    const checked = await runCli(['check', file, '--json'])
    expect(checked.code).toBe(1)
    expect(JSON.parse(checked.stdout).duplicates).toEqual([{ name: 'shipment', key: 'o-1', count: 2, calls: [1, 2] }])
  })

  it('serves until SIGTERM without a command, then exits with the verdict and writes the replay report', async () => {
    const { file } = await recordAgent()
    const report = path.join(dir, 'replay-report.json')
    const child = spawn(process.execPath, [BIN, 'replay', file, ...server, '--report', report], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    const url = await new Promise<string>((resolve) => {
      let stdout = ''
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk
        const match = /^toolstorm replay (\S+) \(3 exchanges from .*, mode replay, order strict\) · admin \S+$/m.exec(stdout)
        if (match) resolve(match[1] as string)
      })
    })
    expect((await fetch(`${url}/items/a`)).status).toBe(429)
    child.kill('SIGTERM')
    expect(await exited).toBe(1)
    expect(stderr).toContain('2 recorded exchange(s) were never requested (first: exchange 2, GET /items/a)')
    expect(JSON.parse(await readFile(report, 'utf8'))).toMatchObject({ kind: 'toolstorm.replay', mode: 'replay', passed: false, code: 'ERR_CASSETTE_UNUSED', served: 1, unused: 2 })
  })

  it('exits 2 before running the command when the cassette cannot be written', async () => {
    const file = path.join(agent, 'not-a-folder', 'x.cassette.jsonl')
    const result = await runCli(['record', file, '--target', upstream.url, ...server, '--', process.execPath, agent])
    expect(result.code).toBe(2)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain(`Failed to start recording: cannot write ${path.join(agent, 'not-a-folder')}`)
    expect(result.stderr).toContain('(ERR_FILE_UNWRITABLE)')
  })

  it('exits 127 when the command cannot start', async () => {
    const result = await runCli(['record', path.join(dir, 'none.cassette.jsonl'), '--target', upstream.url, ...server, '--', 'no-such-command-toolstorm'])
    expect(result.code).toBe(127)
    expect(result.stderr).toContain('Failed to run "no-such-command-toolstorm": command not found.')
  })
})

describe('inspect, check and bad cassettes', { timeout: 120_000 }, () => {
  it('summarises a cassette and runs the contracts on it', async () => {
    const { file } = await recordAgent()
    const inspect = await runCli(['inspect', file])
    expect(inspect.code).toBe(0)
    expect(inspect.stdout).toMatch(/^Valid cassette v4: 3 exchanges, 0 effects \(recorded \S+ via proxy\)\n {2}outcomes: response 3; statuses: 200 1, 201 1, 429 1\nValid report v1 \(run default\): 3 calls, 0 effects\n/)
    expect(inspect.stdout).toContain('rule busy: eligible 1, selected 1, triggered 1')
    const json = JSON.parse((await runCli(['inspect', file, '--json'])).stdout)
    expect(json).toMatchObject({ cassette: { version: 4, exchanges: 3, faults: { rate_limit: 1 } }, calls: 3, routes: { 'GET /items/a': 2, 'POST /ship': 1 } })
    expect((await runCli(['check', file])).code).toBe(0)
    const over = await runCli(['check', file, '--max-calls', '2'])
    expect(over.code).toBe(1)
    expect(over.stdout).toContain('Call budget: 3 / 2 calls')
  })

  it('refuses truncated, wrong-version and hand-edited cassettes with the file, line and field, exit 2', async () => {
    const good = await readFile((await recordAgent()).file, 'utf8')
    const lines = good.split('\n')
    const exchanges = lines.filter((line) => line.startsWith('{"seq":'))
    // As toolstorm wrote it before version 4: the header counts the exchanges, which alone follow.
    const v3 = [JSON.stringify({ ...JSON.parse(lines[0]!), version: 3, exchanges: exchanges.length }), ...exchanges, ''].join('\n')
    const cases: Array<[string, string, string]> = [
      ['truncated', v3.slice(0, v3.length - 30), 'line 4 ends without a newline, so the file is truncated'],
      ['cut', good.replace(exchanges.at(-1)! + '\n', ''), `line 4: $.exchanges: the end line says ${exchanges.length} exchange(s), but ${exchanges.length - 1} precede it, so lines are missing`],
      ['wrong-version', good.replace('"version":4', '"version":5'), 'line 1: $.version: expected cassette version 1, 2, 3 or 4, got 5'],
      ['hand-edited', [lines[0], lines[1]!.replace('"status":429', '"status":"429"'), ...lines.slice(2)].join('\n'), 'line 2: $.response.status: expected number, received string'],
      ['missing-line', [lines[0], lines[1], lines[3], ''].join('\n'), 'line 3: $.seq: expected 2 (positions are contiguous)'],
    ]
    // Every case through inspect; the first also through check and replay (they share the loader).
    const runs = cases.flatMap(([name, content, expected], index) =>
      (index === 0 ? ['inspect', 'check', 'replay'] : ['inspect']).map(async (command) => {
        const file = path.join(dir, `${name}.cassette.jsonl`)
        await writeFile(file, content)
        return { command, name, file, expected, result: await runCli([command, file, ...(command === 'replay' ? server : [])]) }
      }),
    )
    for (const { command, name, file, expected, result } of await Promise.all(runs)) {
      expect(result.code, `${command} ${name}`).toBe(2)
      expect(result.stderr).toContain(`Failed to load the cassette ${file}: ${expected}`)
      expect(result.stderr).toContain('(ERR_CASSETTE_INVALID)')
    }
  })
})

describe('toolstorm har', { timeout: 120_000 }, () => {
  it('exports a cassette to HAR 1.2 and imports it back unchanged', async () => {
    const { file } = await recordAgent()
    const har = path.join(dir, 'agent.har')
    const back = path.join(dir, 'back.cassette.jsonl')
    expect((await runCli(['har', 'export', file, har])).code).toBe(0)
    const document = JSON.parse(await readFile(har, 'utf8'))
    expect(document.log.version).toBe('1.2')
    expect(document.log.entries[0]).toMatchObject({ request: { method: 'GET', url: `${upstream.url}/items/a` }, response: { status: 429, headers: expect.arrayContaining([{ name: 'retry-after', value: '1' }]) } })
    expect((await runCli(['har', 'import', har, back])).code).toBe(0)
    const [original, imported] = await Promise.all([Cassette.load(file), Cassette.load(back)])
    expect(imported.exchanges).toEqual(original.exchanges)
    expect(imported.header.rules).toEqual(original.header.rules)
  })

  it('imports a HAR as Chrome devtools exports it, redacted, and replays it', async () => {
    const token = 'gh' + 'p_' + 'Ab3dE'.repeat(7) + 'x'
    const chromeHar = {
      log: {
        version: '1.2',
        creator: { name: 'WebInspector', version: '537.36' },
        pages: [{ startedDateTime: '2025-03-01T10:00:00.000Z', id: 'page_1', title: 'https://app.example.com/', pageTimings: { onContentLoad: 120, onLoad: 300 } }],
        entries: [
          {
            _initiator: { type: 'script' },
            _priority: 'High',
            _resourceType: 'fetch',
            cache: {},
            connection: '443',
            pageref: 'page_1',
            request: {
              method: 'POST',
              url: 'https://api.example.com/v1/chat?stream=false',
              httpVersion: 'http/2.0',
              headers: [
                { name: ':authority', value: 'api.example.com' },
                { name: ':method', value: 'POST' },
                { name: 'authorization', value: `Bearer ${token}` },
                { name: 'content-type', value: 'application/json' },
              ],
              queryString: [{ name: 'stream', value: 'false' }],
              cookies: [],
              headersSize: -1,
              bodySize: 27,
              postData: { mimeType: 'application/json', text: '{"messages":[{"role":"user"}]}' },
            },
            response: {
              status: 200,
              statusText: '',
              httpVersion: 'http/2.0',
              headers: [
                { name: 'content-type', value: 'application/json' },
                { name: 'content-encoding', value: 'br' },
                { name: 'set-cookie', value: `sid=${token}` },
              ],
              cookies: [],
              content: { size: 24, mimeType: 'application/json', text: '{"reply":"hi","n":1}' },
              redirectURL: '',
              headersSize: -1,
              bodySize: -1,
              _transferSize: 120,
              _error: null,
            },
            serverIPAddress: '93.184.216.34',
            startedDateTime: '2025-03-01T10:00:01.000Z',
            time: 84.2,
            timings: { blocked: 1.1, dns: -1, ssl: -1, connect: -1, send: 0.2, wait: 80, receive: 2.9, _blocked_queueing: 0.5 },
          },
          {
            _resourceType: 'image',
            cache: {},
            request: { method: 'GET', url: 'https://cdn.example.com/logo.png', httpVersion: 'http/2.0', headers: [], queryString: [], cookies: [], headersSize: -1, bodySize: 0 },
            response: { status: 200, statusText: '', httpVersion: 'http/2.0', headers: [{ name: 'content-type', value: 'image/png' }], cookies: [], content: { size: 8, mimeType: 'image/png', text: 'iVBORw0KGgo=', encoding: 'base64' }, redirectURL: '', headersSize: -1, bodySize: -1 },
            startedDateTime: '2025-03-01T10:00:01.500Z',
            time: 5,
            timings: { blocked: -1, dns: -1, ssl: -1, connect: -1, send: 0, wait: 5, receive: 0 },
          },
          {
            cache: {},
            request: { method: 'GET', url: 'https://api.example.com/v1/status', httpVersion: '', headers: [], queryString: [], cookies: [], headersSize: -1, bodySize: 0 },
            response: { status: 0, statusText: '', httpVersion: '', headers: [], cookies: [], content: { size: 0, mimeType: 'x-unknown' }, redirectURL: '', headersSize: -1, bodySize: -1, _transferSize: 0, _error: 'net::ERR_CONNECTION_RESET' },
            startedDateTime: '2025-03-01T10:00:02.000Z',
            time: 12,
            timings: { blocked: -1, dns: -1, ssl: -1, connect: -1, send: 0, wait: 12, receive: 0 },
          },
        ],
      },
    }
    const har = path.join(dir, 'chrome.har')
    const file = path.join(dir, 'chrome.cassette.jsonl')
    await writeFile(har, JSON.stringify(chromeHar, null, 2))
    const imported = await runCli(['har', 'import', har, file])
    expect(imported.code).toBe(0)
    const raw = await readFile(file, 'utf8')
    expect(raw).not.toContain(token)
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges.map((e) => [e.route, e.outcome, e.response?.status ?? null])).toEqual([
      ['POST /v1/chat', 'response', 200],
      ['GET /logo.png', 'response', 200],
      ['GET /v1/status', 'reset', null],
    ])
    expect(cassette.exchanges[0]!.request.headers).toEqual({ authorization: '[REDACTED]', 'content-type': 'application/json' })
    expect(cassette.exchanges[0]!.response!.body).toMatchObject({ decoded: 'br', data: '{"reply":"hi","n":1}' })
    expect(cassette.exchanges[1]!.response!.body).toMatchObject({ encoding: 'base64', data: 'iVBORw0KGgo=' })
    expect(cassette.exchanges[2]!.started).toBe(1)

    // A browser HAR replays through the replay server, acting as the agent's HTTP proxy.
    const script = path.join(dir, 'browser-like.mjs')
    await writeFile(script, `import http from 'node:http'
const proxy = new URL(process.env.HTTP_PROXY)
const send = (method, url, body) => new Promise((resolve) => {
  const req = http.request({ host: proxy.hostname, port: proxy.port, method, path: url, headers: { 'content-type': 'application/json' } }, (res) => { let t = ''; res.setEncoding('latin1'); res.on('data', (c) => (t += c)); res.on('end', () => resolve(res.statusCode + ' ' + (res.headers['content-type'] === 'image/png' ? Buffer.byteLength(t, 'latin1') + ' bytes' : t))) })
  req.on('error', (e) => resolve(e.code))
  req.end(body)
})
console.log(await send('POST', 'https://api.example.com/v1/chat?stream=false', '{"messages":[{"role":"user"}]}'))
console.log(await send('GET', 'https://cdn.example.com/logo.png'))
console.log(await send('GET', 'https://api.example.com/v1/status'))
`)
    // Its https:// exchanges make replay open the CA of "toolstorm ca": keep it in this test's folder.
    const replayed = await runCli(['replay', file, ...server, '--', process.execPath, script], { env: { TOOLSTORM_CA_DIR: path.join(dir, 'ca') } })
    expect(replayed.stdout).toBe('200 {"reply":"hi","n":1}\n200 8 bytes\nECONNRESET\n')
    expect(replayed.code).toBe(0)
  })

  it('refuses a file that is not a HAR, naming the field', async () => {
    const har = path.join(dir, 'not.har')
    await writeFile(har, JSON.stringify({ log: { entries: [{ request: { method: 'GET' }, response: { status: 200 } }] } }))
    const result = await runCli(['har', 'import', har, path.join(dir, 'never.cassette.jsonl')])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`Failed to import ${har}: $.log.entries[0].request.url: missing; expected string`)
  })
})

describe('toolstorm record with nothing to record (#29)', () => {
  it('leaves an existing cassette as it was when the command made no request, and says so', { timeout: 120_000 }, async () => {
    const { file } = await recordAgent()
    const before = await readFile(file, 'utf8')
    const quiet = await runCli(['record', file, '--target', upstream.url, ...server, '--', process.execPath, '-e', 'process.exit(0)'])
    expect(quiet.code).toBe(0)
    expect(quiet.stderr).toContain(`no exchange recorded: the cassette ${file} was left as it was`)
    expect(await readFile(file, 'utf8')).toBe(before)
    // Without a cassette there, the empty recording is written (a valid cassette of 0 exchanges).
    const fresh = path.join(dir, 'empty.cassette.jsonl')
    expect((await runCli(['record', fresh, '--target', upstream.url, ...server, '--', process.execPath, '-e', 'process.exit(0)'])).code).toBe(0)
    expect((await Cassette.load(fresh)).exchanges).toHaveLength(0)
  })
})
