/**
 * One forward-mode `toolstorm proxy`, several agent runs through it at once, each named by the
 * proxy credentials in its HTTP_PROXY and with rules of its own (#36 item 0). Two such runs with
 * retrying agents killed the proxy: a client that left mid-body while a fault held its request
 * made the request-body tap (a Transform nobody read) emit an 'error' no one listened to
 * (`Error: aborted at ClientConnection.onClose … Emitted 'error' event on Transform instance`).
 *
 * Here careful agents (Python requests and httpx, with timeouts and retries) run in four runs with
 * resets, timeouts, rate limits, lost responses and cut streams, while node:http and raw sockets of
 * another run leave at every point of an exchange (mid-head, mid-body, after the request, mid-response,
 * by close and by reset, inside plain and TLS CONNECT tunnels too) and a curl gives up, and a clean run makes its
 * calls. At the end the proxy still runs, every agent got each of its calls answered, every run's
 * report holds each of its calls, and the clean run's report is exactly its calls.
 */
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import path from 'node:path'
import tls from 'node:tls'
import { promisify } from 'node:util'
import { expect, it, onTestFinished } from 'vitest'
import type { Report } from '../../src/engine/schema/report.js'
import { ROOT } from '../helpers/cli.js'
import { startModelUpstream } from '../helpers/model-upstream.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { closing, closingChild, closingServer, temporaryFolder } from '../helpers/teardown.js'
import { startCli } from '../ui/spawn-cli.js'

const run = promisify(execFile)
const AGENT_PY = path.join(ROOT, 'fixtures/http-clients/careful-agent.py')
const CALLS_PER_AGENT = 6
/** Large enough that the proxy has not read the whole body when a fault answers: the case that crashed. */
const BODY_BYTES = 200_000
const CLEAN_CALLS = 20
const ROUNDS = 3

const MODEL = 'POST /v1/chat/completions'
/** Each agent's run and its own rules (`calls` are the route's ordinals: retries count). */
const AGENTS = [
  { run: 'agent-a', client: 'requests', rules: [{ name: 'reset', route: MODEL, kind: 'reset', calls: [2] }, { name: 'lost', route: MODEL, kind: 'response_lost', calls: [5] }] },
  { run: 'agent-b', client: 'httpx', rules: [{ name: 'timeout', route: MODEL, kind: 'timeout', delay: 1, calls: [2] }, { name: 'cut', route: MODEL, kind: 'stream_cut', after: 1, calls: [4] }] },
  { run: 'agent-c', client: 'requests', rules: [{ name: 'busy', route: MODEL, kind: 'rate_limit', calls: [2] }, { name: 'slow', route: MODEL, kind: 'latency', delay: 1, calls: [4] }, { name: 'down', route: MODEL, kind: 'unavailable', calls: [6] }] },
  { run: 'agent-d', client: 'httpx', rules: [{ name: 'reset', route: MODEL, kind: 'reset', calls: [1, 3] }, { name: 'timeout', route: MODEL, kind: 'timeout', delay: 1, calls: [5] }] },
] as const
/** The run whose clients leave at every point of an exchange. */
const CHAOS_RULES = [
  { name: 'wait', route: 'POST /v1/*', kind: 'latency', delay: 0.3 },
  { name: 'held', route: 'POST /held', kind: 'timeout', delay: 2 },
  { name: 'lost', route: 'POST /ship', kind: 'response_lost', calls: [1, 3] },
  { name: 'busy', route: 'GET /items/*', kind: 'rate_limit', probability: 0.3 },
]

const hasPythonClients = hasPythonModules('requests', 'httpx')

/** The upstream of the chaos and clean runs: quick answers, a slow body, and upstreams that break. */
async function startChaosUpstream(): Promise<{ port: number }> {
  const server = closingServer(
    http.createServer((req, res) => {
      req.on('error', () => undefined)
      res.on('error', () => undefined)
      req.resume()
      req.on('end', () => {
        const url = req.url ?? '/'
        if (url === '/reset-after-request') return req.socket.resetAndDestroy()
        if (url === '/close-mid-body') {
          res.writeHead(200, { 'content-length': 1000 })
          res.write('x'.repeat(10))
          return void setTimeout(() => req.socket.destroy(), 20)
        }
        if (url === '/slow') {
          res.writeHead(200, { 'content-type': 'text/plain' })
          let sent = 0
          const timer = setInterval(() => {
            if (res.destroyed || ++sent > 10) {
              clearInterval(timer)
              return void (res.destroyed || res.end())
            }
            res.write(`chunk ${sent}\n`)
          }, 60)
          return
        }
        const body = JSON.stringify(url === '/mcp' ? { jsonrpc: '2.0', id: 1, result: { content: [] } } : { id: url.split('/').pop() })
        res.writeHead(url === '/ship' ? 201 : 200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
        res.end(body)
      })
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as AddressInfo).port }
}

const credentials = (runId: string) => `Basic ${Buffer.from(`${runId}:x`).toString('base64')}`
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A raw client socket to the proxy: every way of leaving an exchange is a few bytes and a close. */
function openSocket(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket))
    socket.on('error', reject)
  })
}

/** Leave by closing, or by resetting (a TCP RST). */
function leave(socket: net.Socket, how: 'close' | 'reset'): void {
  socket.removeAllListeners('error')
  socket.on('error', () => undefined)
  if (how === 'reset') socket.resetAndDestroy()
  else socket.destroy()
}

/** The chaos run's exchanges, each left at another point; resolves when all are done. */
function chaos(proxyPort: number, upstreamPort: number): Promise<unknown[]> {
  const origin = `http://127.0.0.1:${upstreamPort}`
  const head = (method: string, target: string, extra = '') =>
    `${method} ${origin}${target} HTTP/1.1\r\nhost: 127.0.0.1:${upstreamPort}\r\nproxy-authorization: ${credentials('chaos')}\r\n${extra}`
  const bigBody = 'content-type: application/json\r\ncontent-length: 1000000\r\n\r\n' + '{"model":"gpt-4o","messages":[{"role":"user","content":"' + 'x'.repeat(64 * 1024)
  const mcpBody = 'content-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 200000\r\n\r\n{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ship","arguments":{"pad":"' + 'x'.repeat(32 * 1024)
  const whole = (json: string) => `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(json)}\r\n\r\n${json}`
  const model = whole(JSON.stringify({ model: 'gpt-4o', stream: true, messages: [{ role: 'user', content: 'hi' }] }))
  /** Write `bytes`, wait `ms` (or for the first response bytes), then leave. */
  const exchange = async (bytes: string, how: 'close' | 'reset', wait: number | 'first-byte' | 'end') => {
    const socket = await openSocket(proxyPort)
    socket.on('error', () => undefined)
    const received = new Promise<void>((resolve) => {
      socket.once('data', () => resolve())
      socket.once('close', () => resolve())
    })
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    socket.write(bytes)
    if (wait === 'first-byte') await Promise.race([received, pause(3_000)])
    else if (wait === 'end') await Promise.race([ended, pause(5_000)])
    else await pause(wait)
    leave(socket, how)
  }
  /** Inside a CONNECT tunnel to the upstream, plain or TLS (the proxy's leaf is not checked: this client only leaves), leave mid-body. */
  const tunnelled = async (how: 'close' | 'reset', secure: boolean) => {
    const socket = await openSocket(proxyPort)
    socket.on('error', () => undefined)
    socket.write(`CONNECT 127.0.0.1:${upstreamPort} HTTP/1.1\r\nhost: 127.0.0.1:${upstreamPort}\r\nproxy-authorization: ${credentials('chaos')}\r\n\r\n`)
    // Bounded: a TLS socket over a connection that is already gone may never say so.
    await Promise.race([
      pause(3_000),
      new Promise<void>((resolve) => {
        socket.once('data', () => resolve())
        socket.once('close', () => resolve())
      }),
    ])
    let inner: net.Socket = socket
    if (secure) {
      inner = tls.connect({ socket, servername: 'localhost', rejectUnauthorized: false })
      inner.on('error', () => undefined)
      const tunnel = inner
      await Promise.race([
        pause(3_000),
        new Promise<void>((resolve) => {
          tunnel.once('secureConnect', () => resolve())
          tunnel.once('close', () => resolve())
        }),
      ])
    }
    inner.write(`POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:${upstreamPort}\r\n${bigBody}`)
    await pause(50)
    leave(socket, how)
    inner.destroy()
  }
  /** A node:http client that aborts its request once the response started, or mid-upload. */
  const nodeClient = (target: string, abortAt: 'response' | 'upload') =>
    new Promise<void>((resolve) => {
      const request = http.request({ host: '127.0.0.1', port: proxyPort, method: abortAt === 'upload' ? 'POST' : 'GET', path: origin + target, headers: { 'proxy-authorization': credentials('chaos'), 'content-type': 'application/json' } })
      request.on('error', () => resolve())
      request.on('close', () => resolve())
      request.on('response', (response) => {
        response.on('error', () => undefined)
        response.once('data', () => request.destroy())
        response.on('end', () => resolve())
      })
      if (abortAt === 'upload') {
        request.write('{"model":"gpt-4o","messages":[{"role":"user","content":"' + 'y'.repeat(100_000))
        setTimeout(() => request.destroy(), 100)
      } else request.end()
    })
  const curl = () => run('curl', ['-s', '-o', '/dev/null', '--max-time', '0.25', '--noproxy', '', '-x', `http://chaos:x@127.0.0.1:${proxyPort}`, `${origin}/slow`]).catch(() => undefined)
  const cases: Array<() => Promise<unknown>> = []
  for (const how of ['close', 'reset'] as const) {
    cases.push(
      // Mid-head, mid-body (a model call held by latency, the fast path, an MCP request whose body is read first, a fault that times out).
      () => exchange(`${head('POST', '/ship')}content-le`, how, 20),
      () => exchange(head('POST', '/v1/chat/completions') + bigBody, how, 50),
      () => exchange(head('POST', '/ship') + bigBody, how, 50),
      () => exchange(head('POST', '/mcp') + mcpBody, how, 50),
      () => exchange(head('POST', '/held') + bigBody, how, 150),
      // After the whole request, before the answer: held by latency, held by a timeout, waiting on a slow upstream.
      () => exchange(head('POST', '/v1/chat/completions') + model, how, 100),
      () => exchange(head('POST', '/held') + whole('{}'), how, 100),
      // Mid-response: a slow body, a model stream; and pipelined requests left behind.
      () => exchange(`${head('GET', '/slow')}\r\n`, how, 'first-byte'),
      () => exchange(head('POST', '/v1/chat/completions') + model, how, 'first-byte'),
      () => exchange(`${head('GET', '/items/p1')}\r\n${head('GET', '/slow')}\r\n${head('POST', '/ship')}${whole('{}')}`, how, 'first-byte'),
      // Upstreams that break: a reset after the request, a close mid-body; a lost response.
      () => exchange(head('POST', '/reset-after-request') + whole('{"order":"o-1"}'), how, 'end'),
      () => exchange(`${head('GET', '/close-mid-body')}\r\n`, how, 'end'),
      () => exchange(head('POST', '/ship') + whole('{"order":"o-2"}'), how, 'end'),
      () => tunnelled(how, false),
      () => tunnelled(how, true),
    )
  }
  cases.push(() => nodeClient('/slow', 'response'), () => nodeClient('/v1/chat/completions', 'upload'), () => nodeClient('/ship', 'upload'), curl)
  return Promise.all(cases.map((start) => start().catch((error: unknown) => error)))
}

/** The clean run: node:http calls in absolute form with its credentials, one after another. */
async function cleanRun(proxyPort: number, upstreamPort: number): Promise<Array<[number, string]>> {
  const answers: Array<[number, string]> = []
  const agent = new http.Agent({ keepAlive: true })
  onTestFinished(() => agent.destroy())
  for (let index = 1; index <= CLEAN_CALLS; index++) {
    answers.push(
      await new Promise<[number, string]>((resolve, reject) => {
        const request = http.request({ agent, host: '127.0.0.1', port: proxyPort, path: `http://127.0.0.1:${upstreamPort}/items/clean-${index}`, headers: { 'proxy-authorization': credentials('clean') } }, (response) => {
          let text = ''
          response.on('data', (chunk: Buffer) => (text += chunk))
          response.on('end', () => resolve([response.statusCode ?? 0, text]))
          response.on('error', reject)
        })
        request.on('error', reject)
        request.end()
      }),
    )
    await pause(30)
  }
  return answers
}

it.skipIf(!hasPythonClients)(
  'keeps serving while concurrent runs reset, time out and abort at every point, and no run loses a call',
  async () => {
    const dir = await temporaryFolder('toolstorm-concurrent-runs-')
    const models = closing(await startModelUpstream({ gapMs: 20 }))
    const upstream = await startChaosUpstream()
    const reportFile = path.join(dir, 'report.json')
    const cli = await startCli(
      ['proxy', '--port', '0', '--admin-port', '0', '--ready-json', '--ca-dir', path.join(dir, 'ca'), '--connect-port', String(upstream.port), '--report', reportFile, '--record', path.join(dir, 'all.cassette.jsonl')],
      1,
    )
    closingChild(cli.child)
    const ready = JSON.parse(cli.lines[0] as string) as { port: number; adminUrl: string; token: string }
    const admin = async (method: string, target: string, body?: unknown) => {
      const response = await fetch(`${ready.adminUrl}${target}`, { method, headers: { authorization: `Bearer ${ready.token}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) })
      expect(response.status, `${method} ${target}: ${await response.clone().text()}`).toBe(200)
      return response.json()
    }
    for (const agent of AGENTS) await admin('PUT', `/rules?run=${agent.run}`, { version: 1, rules: agent.rules })
    await admin('PUT', '/rules?run=chaos', { version: 1, seed: 7, rules: CHAOS_RULES })

    const agents = Promise.all(
      AGENTS.map(async (agent) => {
        const env = { ...process.env, HTTP_PROXY: `http://${agent.run}:x@127.0.0.1:${ready.port}`, http_proxy: `http://${agent.run}:x@127.0.0.1:${ready.port}`, NO_PROXY: '', no_proxy: '' }
        const { stdout } = await run(PYTHON, [AGENT_PY, agent.client, models.url, String(CALLS_PER_AGENT), String(BODY_BYTES)], { env, timeout: 120_000 })
        return { ...agent, calls: (JSON.parse(stdout) as { calls: Array<Array<number | string>> }).calls }
      }),
    )
    // Settled here: a failure shows in the assertions below, after the one on the proxy's life.
    const clean = cleanRun(ready.port, upstream.port).catch((error: unknown) => error)
    const settledAgents = agents.catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))))
    for (let round = 0; round < ROUNDS; round++) await chaos(ready.port, upstream.port)

    // The proxy is alive and serving.
    expect(cli.child.exitCode, cli.stderr).toBeNull()
    expect(cli.stderr).not.toMatch(/Unhandled|node:events|Error: aborted/)
    const [agentResults, cleanAnswers] = await Promise.all([settledAgents, clean])
    if (agentResults instanceof Error) throw agentResults
    expect(cleanAnswers).toEqual(Array.from({ length: CLEAN_CALLS }, (_, index) => [200, JSON.stringify({ id: `clean-${index + 1}` })]))
    const cleanReport = (await admin('GET', '/report?run=clean')) as Report
    expect(cleanReport.calls.map((call) => [call.route, call.outcome, call.status, call.injected])).toEqual(Array.from({ length: CLEAN_CALLS }, (_, index) => [`GET /items/clean-${index + 1}`, 'response', 200, false]))

    // Every agent had each call answered in the end, and its run holds every try, with its faults injected.
    for (const agent of agentResults) {
      expect(agent.calls.map((tries) => tries.at(-1)), `${agent.run}: ${JSON.stringify(agent.calls)}`).toEqual(Array(CALLS_PER_AGENT).fill(200))
      const report = (await admin('GET', `/report?run=${agent.run}`)) as Report
      expect(report.calls.length, agent.run).toBe(agent.calls.flat().length)
      expect(report.calls.every((call) => call.route === MODEL && call.outcome !== 'running')).toBe(true)
      // Its own rules fired (which of them depends on how many tries timed out), never another run's.
      const injected = new Set(report.calls.filter((call) => call.injected).map((call) => call.fault))
      expect(injected.size, agent.run).toBeGreaterThan(0)
      for (const name of injected) expect(agent.rules.map((rule) => rule.name as string), agent.run).toContain(name)
    }
    const chaosReport = (await admin('GET', '/report?run=chaos')) as Report
    expect(chaosReport.calls.length).toBeGreaterThan(ROUNDS * 10)

    // It stops as asked, and writes its report with every run.
    expect(await cli.stop()).toBe(0)
    const written = JSON.parse(await readFile(reportFile, 'utf8')) as { runs: Array<{ run: string; report: Report }> }
    const runs = new Map(written.runs.map((entry) => [entry.run, entry.report]))
    expect(runs.get('clean')?.calls).toHaveLength(CLEAN_CALLS)
    for (const agent of agentResults) expect(runs.get(agent.run)?.calls).toHaveLength(agent.calls.flat().length)
  },
  240_000,
)
