/**
 * Clients that honour HTTP_PROXY through `record -- cmd`, `replay -- cmd` and `toolstorm proxy`,
 * in reverse (base-URL) and forward mode (issue #22, item 1). `record` and `replay` set HTTP_PROXY for the
 * command, so these clients send a base-URL request in absolute form addressed to the server
 * itself (Node's fetch with NODE_USE_ENV_PROXY even opens a CONNECT tunnel to it): it must be
 * served as the origin-form request it stands for, exactly as Node's plain fetch is served. One
 * process runs every Python client (fixtures/http-clients/clients.py) and curl; Node's clients
 * run in their own cases, where the Node running the tests supports NODE_USE_ENV_PROXY.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { ROOT, runCli } from '../helpers/cli.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'
import type { ProxyTransport } from '../helpers/transports.js'
import { servedUrl, startCli } from '../ui/spawn-cli.js'

const run = promisify(execFile)
const CLIENTS_PY = path.join(ROOT, 'fixtures/http-clients/clients.py')
const PYTHON_CLIENTS = ['urllib', 'requests', 'httpx', 'httpx-async', 'openai', 'curl']
const hasPythonClients = hasPythonModules('requests', 'httpx', 'openai')

/** NODE_USE_ENV_PROXY came with Node 24 (and 22.21): on older lines Node's clients ignore HTTP_PROXY, so there is nothing to test. */
function supportsEnvProxy(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  return major >= 24 || (major === 22 && minor >= 21)
}
const nodeWithEnvProxy = supportsEnvProxy(process.versions.node)

let dir: string
let upstream: Upstream
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-proxy-clients-'))
  upstream = await startUpstream()
})
afterAll(async () => {
  await upstream?.close()
  await rm(dir, { recursive: true, force: true })
})

/** What each client must see: its item and its shipment (the openai SDK: its completion). */
function served(clients: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(clients.map((name) => [name, name === 'openai' ? [[200, 'ok']] : [[200, name], [201, name]]]))
}

/** Exchanges the clients send: two each, one for the openai SDK. */
const exchangesOf = (clients: readonly string[]) => clients.reduce((sum, name) => sum + (name === 'openai' ? 1 : 2), 0)

/** The environment of toolstorm (and so of its command): loopback is proxied too; the Node clients run with this Node. */
const ENV = { NO_PROXY: '', no_proxy: '', TOOLSTORM_TEST_NODE: process.execPath }

interface Mode {
  readonly name: ProxyTransport
  /** The flags that choose the mode, for record and the proxy (forward: the ports Node's env proxy tunnels plain HTTP to). */
  flags(clients: readonly string[]): string[]
  /** What the clients request under: the URL toolstorm gives the command, or the upstream itself. */
  base(): string
}

const MODES: readonly Mode[] = [
  { name: 'reverse', flags: () => ['--target', upstream.url], base: () => 'proxy-url' },
  // Node's env proxy tunnels http:// URLs through CONNECT, which reaches 443 and the ports allowed.
  { name: 'forward', flags: (clients) => (clients.includes('node') ? ['--connect-port', String(upstream.port)] : []), base: () => upstream.url },
]

const LISTEN = ['--port', '0', '--admin-port', '0']

/**
 * Each case starts toolstorm and a Python process importing requests, httpx and the openai SDK, once
 * or twice: a CI run on a loaded 2-core machine took just over the project's 30 s default.
 */
const CLIENTS_TIMEOUT_MS = 150_000

/** Record the clients' traffic with `record -- cmd`, then replay it with `replay -- cmd`: both serve every client. */
async function recordThenReplay(mode: Mode, clients: readonly string[]): Promise<void> {
  const file = path.join(dir, `${mode.name}-${clients.join('-')}.jsonl`)
  const command = ['--', PYTHON, CLIENTS_PY, mode.base(), ...clients]
  const recorded = await runCli(['record', file, ...mode.flags(clients), ...LISTEN, ...command], { env: ENV, timeoutMs: 120_000 })
  expect(recorded.code, recorded.stderr).toBe(0)
  expect(JSON.parse(recorded.stdout)).toEqual(served(clients))
  const cassette = await Cassette.load(file)
  expect(cassette.exchanges.map((exchange) => exchange.response?.status)).toEqual(clients.flatMap((name) => (name === 'openai' ? [200] : [200, 201])))
  const replayed = await runCli(['replay', file, ...LISTEN, ...command], { env: ENV, timeoutMs: 120_000 })
  expect(replayed.code, replayed.stderr).toBe(0)
  expect(JSON.parse(replayed.stdout)).toEqual(served(clients))
  expect(replayed.stderr).toContain(`Replayed ${exchangesOf(clients)} of ${exchangesOf(clients)} exchange(s)`)
}

/** Run the clients against `toolstorm proxy` with HTTP_PROXY pointing at it, as a user sets it. */
async function throughProxy(mode: Mode, clients: readonly string[]): Promise<void> {
  const report = path.join(dir, `${mode.name}-${clients.join('-')}-report.json`)
  const proxy = await startCli(['proxy', ...mode.flags(clients), ...LISTEN, '--report', report], 2)
  try {
    const url = servedUrl(proxy)
    const before = upstream.hits()
    const env = { ...process.env, ...ENV, HTTP_PROXY: url, http_proxy: url, HTTPS_PROXY: url, https_proxy: url, TOOLSTORM_PROXY_URL: url }
    const { stdout } = await run(PYTHON, [CLIENTS_PY, mode.base(), ...clients], { env, timeout: 120_000 })
    expect(JSON.parse(stdout)).toEqual(served(clients))
    expect(upstream.hits() - before).toBe(exchangesOf(clients))
  } finally {
    expect(await proxy.stop()).toBe(0)
  }
}

for (const mode of MODES) {
  describe(`clients that honour HTTP_PROXY (${mode.name})`, () => {
    it.skipIf(!hasPythonClients)('record and replay serve urllib, requests, httpx (sync and async), the openai SDK and curl as Node fetch', async () => {
      await recordThenReplay(mode, PYTHON_CLIENTS)
    }, CLIENTS_TIMEOUT_MS)

    it.skipIf(!hasPythonClients)('the proxy serves urllib, requests, httpx (sync and async), the openai SDK and curl as Node fetch', async () => {
      await throughProxy(mode, PYTHON_CLIENTS)
    }, CLIENTS_TIMEOUT_MS)

    // Skipped on Node 20: its fetch and node:http never read HTTP_PROXY (CI runs this on Node 24).
    it.skipIf(!nodeWithEnvProxy)('record and replay serve Node fetch and node:http with NODE_USE_ENV_PROXY=1', async () => {
      await recordThenReplay(mode, ['node'])
    }, CLIENTS_TIMEOUT_MS)

    it.skipIf(!nodeWithEnvProxy)('the proxy serves Node fetch and node:http with NODE_USE_ENV_PROXY=1', async () => {
      await throughProxy(mode, ['node'])
    }, CLIENTS_TIMEOUT_MS)
  })
}

describe('a request that would really loop', () => {
  it('record in forward mode answers 508 naming the address to a client that requests the proxy\'s own URL', async () => {
    const looped = await runCli(['record', path.join(dir, 'loop.jsonl'), ...LISTEN, '--', 'sh', '-c', 'curl -s -w "\\n%{http_code}" "$TOOLSTORM_PROXY_URL/items/a"'], { env: ENV })
    const [body, status] = looped.stdout.split('\n')
    expect(status).toBe('508')
    const proxyUrl = /toolstorm proxy (\S+) /.exec(looped.stderr)?.[1] as string
    expect(JSON.parse(body as string).error.message).toContain(`Refused to forward a request to ${new URL(proxyUrl).host}: that is this proxy itself (its data plane`)
    expect(upstream.hits('/items/a')).toBe(0)
  })
})
