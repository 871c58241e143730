/**
 * Issue 5: "recording and strict replay of an HTTPS session work". A real HTTPS upstream (its own
 * test CA) behind the forward proxy, which intercepts CONNECT with the toolstorm CA and records;
 * then the replay server, with no upstream at all, answers CONNECT with the toolstorm CA and
 * serves the recorded exchanges strictly: the same statuses, the same Retry-After, the same reset.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { fetch as undiciFetch, ProxyAgent } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { createStorm } from '../../src/create-storm.js'
import { createInMemoryCertificateAuthority } from '../../src/proxy/tls/certificate-authority.js'
import { runCli } from '../helpers/cli.js'
import { startHttpsProxied, upstreamTestCa } from '../helpers/https-proxied.js'
import { FAULT_RULES } from '../helpers/proxied.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'

const run = promisify(execFile)
/** curl and the child processes must proxy loopback too. */
const NO_NO_PROXY = { NO_PROXY: '', no_proxy: '' }

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-https-cassette-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

interface Outcome {
  status?: number
  retryAfter?: string | null
  body?: string
  error?: string
}

/** A 429 then a read, a lost acknowledgement then its retry, as undici sees them through a proxy. */
async function traffic(base: string, dispatcher: ProxyAgent, order = 'o-1'): Promise<Outcome[]> {
  const request = async (pathname: string, init: { method?: string; body?: string } = {}): Promise<Outcome> => {
    try {
      const response = await undiciFetch(base + pathname, { ...init, ...(init.body ? { headers: { 'content-type': 'application/json' } } : {}), dispatcher })
      return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.text() }
    } catch (error) {
      return { error: (error as Error & { cause?: NodeJS.ErrnoException }).cause?.code ?? (error as Error).message }
    }
  }
  const ship = { method: 'POST', body: JSON.stringify({ order }) }
  return [await request('/items/a'), await request('/items/a'), await request('/ship', ship), await request('/ship', ship)]
}

/** The same traffic with curl through the proxy, trusting the CA in `caFile`: `status retry-after exit`. */
async function curlTraffic(base: string, proxyUrl: string, caFile: string): Promise<string[]> {
  const curl = async (args: string[]) => {
    const result = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code} %header{retry-after}', '-x', proxyUrl, '--cacert', caFile, ...args], { env: { ...process.env, ...NO_NO_PROXY } }).catch(
      (error: { stdout: string; code: number }) => error,
    )
    return `${result.stdout} exit ${'code' in result ? result.code : 0}`
  }
  const ship = ['-X', 'POST', '-H', 'content-type: application/json', '--data', '{"order":"o-1"}', `${base}/ship`]
  return [await curl([`${base}/items/a`]), await curl([`${base}/items/a`]), await curl(ship), await curl(ship)]
}

/** Record the traffic through the intercepting forward proxy; the upstream is gone afterwards. */
async function recordHttpsSession(): Promise<{ cassette: Cassette; result: Outcome[]; base: string; commits: string[] }> {
  const storm = createStorm(FAULT_RULES)
  const recorder = createCassetteRecorder(storm, { source: 'proxy' })
  const env = await startHttpsProxied(FAULT_RULES, { storm, observer: recorder.observer })
  let result: Outcome[]
  try {
    result = await traffic(env.base, env.dispatcher)
  } finally {
    await env.close()
    await recorder.close()
  }
  return { cassette: await recorder.cassette(), result, base: env.base, commits: [...env.upstream.commits] }
}

describe('record an HTTPS session through the forward proxy, replay it with no upstream', () => {
  it('records each intercepted exchange with its https URL, fault and evidence', async () => {
    const { cassette, result, base, commits } = await recordHttpsSession()
    expect(result.map((o) => o.status ?? o.error)).toEqual([429, 200, 'ECONNRESET', 201])
    expect(result[0]?.retryAfter).toBe('2')
    expect(commits).toEqual(['o-1', 'o-1'])
    expect(cassette.exchanges.map((e) => [e.request.url, e.outcome, e.response?.status ?? null, e.fault?.kind ?? null])).toEqual([
      [`${base}/items/a`, 'response', 429, 'rate_limit'],
      [`${base}/items/a`, 'response', 200, null],
      [`${base}/ship`, 'reset', null, 'response_lost'],
      [`${base}/ship`, 'response', 201, null],
    ])
    // The upstream's real answer to the lost write stays as evidence.
    expect(JSON.parse(cassette.exchanges[2]!.upstream!.body!.data)).toEqual({ shipment: 1, order: 'o-1' })
  })

  it('gives undici (ProxyAgent trusting the toolstorm CA) the same statuses, Retry-After and reset', async () => {
    const recorded = await recordHttpsSession()
    const replay = await startReplayServer(recorded.cassette)
    const dispatcher = new ProxyAgent({ uri: replay.url, requestTls: { ca: replay.ca!.certificatePem } })
    try {
      expect(await traffic(recorded.base, dispatcher)).toEqual(recorded.result)
    } finally {
      await dispatcher.close()
    }
    expect(await replay.close()).toMatchObject({ passed: true, served: 4, expected: 4 })
  })

  it('gives curl -x … --cacert the same statuses, Retry-After and reset', async () => {
    const recorded = await recordHttpsSession()
    const replay = await startReplayServer(recorded.cassette)
    const caFile = path.join(dir, 'replay-ca.pem')
    await writeFile(caFile, replay.ca!.certificatePem)
    // curl exits 56 on a reset under TLS, as against a real HTTPS server that resets.
    expect(await curlTraffic(recorded.base, replay.url, caFile)).toEqual(['429 2 exit 0', '200  exit 0', '000  exit 56', '201  exit 0'])
    expect((await replay.close()).passed).toBe(true)
  })

  it('fails the replay on a request that differs from the recording, naming it', async () => {
    const recorded = await recordHttpsSession()
    const replay = await startReplayServer(recorded.cassette)
    const dispatcher = new ProxyAgent({ uri: replay.url, requestTls: { ca: replay.ca!.certificatePem } })
    let outcomes: Outcome[]
    try {
      outcomes = await traffic(recorded.base, dispatcher, 'o-2')
    } finally {
      await dispatcher.close()
    }
    expect(outcomes.map((o) => o.status ?? o.error)).toEqual([429, 200, 422, 422])
    expect(JSON.parse(outcomes[2]!.body!)).toMatchObject({ error: { code: 'ERR_CASSETTE_MISMATCH' } })
    const verdict = await replay.close()
    expect(verdict).toMatchObject({ passed: false, code: 'ERR_CASSETTE_MISMATCH' })
    expect(verdict.message).toBe(
      `Failed to replay "POST ${recorded.base}/ship" (request 3): it differs from exchange 3 of <recording> (POST /ship · POST ${recorded.base}/ship): body differs at $.order: "o-1" ≠ "o-2". Re-record the cassette, or relax matching (see https://github.com/toolstorm/toolstorm/blob/main/docs/cassettes.md).`,
    )
  })
})

describe('passthrough replay of HTTPS', () => {
  it('sends a request the cassette does not hold to the real upstream, verified with upstreamCa', async () => {
    const upstreamCa = await upstreamTestCa()
    const upstream = await startUpstream({ tls: await upstreamCa.issue(['127.0.0.1']) })
    const ca = await createInMemoryCertificateAuthority()
    const replay = await startReplayServer(Cassette.from({}, []), { mode: 'passthrough-unmatched', ca, connectPorts: [upstream.port], upstreamCa: [upstreamCa.certPem] })
    const dispatcher = new ProxyAgent({ uri: replay.url, requestTls: { ca: ca.certificatePem } })
    try {
      const response = await undiciFetch(`${upstream.url}/items/z`, { dispatcher })
      expect(response.status).toBe(200)
      expect(await response.json()).toMatchObject({ id: 'z' })
      expect(upstream.hits('/items/z')).toBe(1)
    } finally {
      await dispatcher.close()
      await upstream.close()
    }
    expect(await replay.close()).toMatchObject({ passed: true, passedThrough: 1 })
  })
})

describe('toolstorm record and replay of an HTTPS session', { timeout: 120_000 }, () => {
  let upstream: Upstream
  let upstreamCaFile: string
  let rules: string
  let script: string
  beforeAll(async () => {
    const upstreamCa = await upstreamTestCa()
    upstream = await startUpstream({ tls: await upstreamCa.issue(['127.0.0.1']) })
    upstreamCaFile = path.join(dir, 'upstream-ca.pem')
    await writeFile(upstreamCaFile, upstreamCa.certPem)
    rules = path.join(dir, 'rules.json')
    await writeFile(rules, JSON.stringify(FAULT_RULES))
    // curl reads https_proxy, which toolstorm sets for the command; it trusts the toolstorm CA.
    script = path.join(dir, 'agent.sh')
    await writeFile(
      script,
      `base=$1; ca=$2; order=\${3:-o-1}
req() { curl -s -o /dev/null -w '%{http_code} %header{retry-after}' --cacert "$ca" "$@"; echo " exit $?"; }
req "$base/items/a"
req "$base/items/a"
req -X POST -H 'content-type: application/json' --data "{\\"order\\":\\"$order\\"}" "$base/ship"
req -X POST -H 'content-type: application/json' --data "{\\"order\\":\\"$order\\"}" "$base/ship"
`,
    )
  })
  afterAll(async () => {
    await upstream.close()
  })

  it('records with the CA options, then replays with --ca-dir and no upstream; a changed request fails it', async () => {
    const caDir = path.join(dir, 'ca')
    const caFile = path.join(caDir, 'ca.pem')
    const file = path.join(dir, 'https.cassette.jsonl')
    const server = ['--port', '0', '--admin-port', '0']
    const recorded = await runCli(['record', file, '--ca-dir', caDir, '--connect-port', String(upstream.port), '--upstream-ca', upstreamCaFile, '--rules', rules, ...server, '--', 'sh', script, upstream.url, caFile], {
      env: NO_NO_PROXY,
    })
    expect(recorded.stdout).toBe('429 2 exit 0\n200  exit 0\n000  exit 56\n201  exit 0\n')
    expect(recorded.code).toBe(0)
    expect(recorded.stderr).toContain(`HTTPS: CONNECT is intercepted with the CA ${caFile}`)
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges.map((e) => e.request.url)).toEqual([`${upstream.url}/items/a`, `${upstream.url}/items/a`, `${upstream.url}/ship`, `${upstream.url}/ship`])

    // No --connect-port: replay allows the ports the cassette recorded. The upstream is never asked.
    const hits = upstream.hits()
    // The upstream reports no commits, and the lost answer of POST /ship came after it committed:
    // the replay cannot judge a duplicate, so its contracts fail unless it replays without them.
    const unjudged = await runCli(['replay', file, '--ca-dir', caDir, ...server, '--', 'sh', script, upstream.url, caFile], { env: NO_NO_PROXY })
    expect(unjudged.stdout).toBe(recorded.stdout)
    expect(unjudged.stderr).toContain('no effect was reported in this run, yet call 3 (POST /ship) lost its answer after its upstream answered it')
    expect(unjudged.code).toBe(1)
    const replayed = await runCli(['replay', file, '--no-contracts', '--ca-dir', caDir, ...server, '--', 'sh', script, upstream.url, caFile], { env: NO_NO_PROXY })
    expect(replayed.stdout).toBe(recorded.stdout)
    expect(replayed.stderr).toContain(`Replayed 4 of 4 exchange(s) from ${file}.`)
    expect(replayed.code).toBe(0)

    const diverged = await runCli(['replay', file, '--ca-dir', caDir, ...server, '--', 'sh', script, upstream.url, caFile, 'o-2'], { env: NO_NO_PROXY })
    expect(diverged.stdout).toBe('429 2 exit 0\n200  exit 0\n422  exit 0\n422  exit 0\n')
    expect(diverged.stderr).toContain(`Failed to replay "POST ${upstream.url}/ship" (request 3): it differs from exchange 3 of ${file}`)
    expect(diverged.stderr).toContain('(ERR_CASSETTE_MISMATCH)')
    expect(diverged.code).toBe(1)
    expect(upstream.hits()).toBe(hits)
  })

  it('intercepts every host while recording, even with --tunnel-unmatched, and says so', async () => {
    const caDir = path.join(dir, 'ca-tunnel')
    const file = path.join(dir, 'tunnel.cassette.jsonl')
    // No rules: --tunnel-unmatched would tunnel every host untouched, and the cassette would be empty.
    const result = await runCli(
      ['record', file, '--ca-dir', caDir, '--connect-port', String(upstream.port), '--upstream-ca', upstreamCaFile, '--tunnel-unmatched', '--port', '0', '--admin-port', '0', '--', 'curl', '-s', '-o', '/dev/null', '-w', '%{http_code}', '--cacert', path.join(caDir, 'ca.pem'), `${upstream.url}/items/b`],
      { env: NO_NO_PROXY },
    )
    expect(result.stdout).toBe('200')
    expect(result.stderr).toContain('--tunnel-unmatched is ignored while recording: every CONNECT is intercepted, so that no host is missing from the cassette.')
    expect((await Cassette.load(file)).exchanges.map((e) => [e.request.url, e.response?.status])).toEqual([[`${upstream.url}/items/b`, 200]])
  })
})
