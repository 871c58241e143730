/**
 * HTTPS through a command run next to the proxy, forward mode: the command is told to trust the
 * proxy's CA (`TOOLSTORM_CA`, `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`,
 * `NODE_EXTRA_CA_CERTS`), under `toolstorm explore` as under `toolstorm record`. The agent is
 * Python's urllib calling a real HTTPS server (a certificate of its own CA, which the proxy is
 * given with --upstream-ca) through HTTPS_PROXY, with no trust configured by hand.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { describeOf } from '../../src/explore/format-matrix.js'
import { runCli } from '../helpers/cli.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { closing, temporaryFolder } from '../helpers/teardown.js'
import { createTestCa } from '../helpers/test-ca.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'
import { exploreCli } from './explore-cli.js'

// Reads one item over HTTPS, no retry: a timeout fails it, a slow answer does not.
const AGENT = `import json, os, sys, urllib.request
assert os.environ["SSL_CERT_FILE"] == os.environ["TOOLSTORM_CA"], "the CA is named once"
with urllib.request.urlopen(sys.argv[1] + "/items/sku-1", timeout=10) as response:
    item = json.loads(response.read())
assert item["id"] == "sku-1", item
print("read", item["id"])
`

/** An HTTPS upstream of its own CA, the agent, and the proxy flags that reach the upstream (a CA folder of the test's). */
async function httpsSetup(): Promise<{ upstream: Upstream; agent: string[]; https: string[] }> {
  const dir = await temporaryFolder('toolstorm-https-agent-')
  const ca = await createTestCa()
  const upstream = closing(await startUpstream({ tls: await ca.issue(['127.0.0.1']) }))
  await writeFile(path.join(dir, 'upstream-ca.pem'), ca.certPem)
  await writeFile(path.join(dir, 'agent.py'), AGENT)
  return { upstream, agent: [PYTHON, path.join(dir, 'agent.py'), upstream.url], https: ['--ca-dir', path.join(dir, 'ca'), '--upstream-ca', path.join(dir, 'upstream-ca.pem'), '--connect-port', String(upstream.port)] }
}

describe.skipIf(!hasPythonModules('json'))('HTTPS through a command run next to the proxy', { timeout: 120_000 }, () => {
  it('explore: the runs trust the CA by themselves, and a fault on an HTTPS call is found', async () => {
    const { upstream, agent, https } = await httpsSetup()
    const explored = await exploreCli([...https, '--faults', 'timeout,latency'], agent)
    // The baseline passed: the agent's TLS handshakes with the proxy's leaves were trusted, with nothing set by hand.
    expect(explored.code, explored.stderr).toBe(1)
    expect(Object.fromEntries(explored.result!.variations.map((variation) => [describeOf(variation), variation.status]))).toEqual({ 'timeout on GET /items/sku-1 #1': 'fail', 'latency on GET /items/sku-1 #1': 'pass' })
    expect(explored.result!.variations.find((variation) => variation.status === 'fail')!.output).toContain('HTTP Error 504')
    // Through the tunnel to the real server: the baseline's read and the slow one (a timeout answers before the upstream).
    expect(upstream.hits('/items/sku-1')).toBe(2)
  })

  it('record: the command trusts the CA by itself, and its HTTPS exchanges are recorded', async () => {
    const { upstream, agent, https } = await httpsSetup()
    const file = path.join(await temporaryFolder('toolstorm-record-https-'), 'https.cassette.jsonl')
    const recorded = await runCli(['record', file, '--port', '0', '--admin-port', '0', ...https, '--', ...agent])
    expect(recorded.code, recorded.stderr).toBe(0)
    expect(recorded.stdout).toContain('read sku-1')
    expect((await Cassette.load(file)).exchanges.map((exchange) => [exchange.request.url, exchange.response?.status])).toEqual([[`${upstream.url}/items/sku-1`, 200]])
  })
})
