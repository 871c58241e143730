/**
 * Explore and the commits the tool side reports, with the tool server started outside the
 * command (a service that keeps running): it reports to the admin port `--admin-port` fixed, and
 * a lost answer on a write whose commits nobody reports fails as unjudged instead of passing.
 * The agent retries a failed shipment without an idempotency key: under `response_lost` it ships twice.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import { describeOf } from '../../src/explore/format-matrix.js'
import { freePort } from '../helpers/redis-server.js'
import { closingServer, temporaryFolder } from '../helpers/teardown.js'
import { exploreCli } from './explore-cli.js'

const AGENT = `
const ship = async () => {
  const response = await fetch(process.env.TOOLSTORM_PROXY_URL + '/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"order":"order-7"}' })
  if (!response.ok) throw new Error('HTTP ' + response.status)
  return response.json()
}
// The bug: a failed shipment is retried without an idempotency key.
try { await ship() } catch { await ship() }
`

/** A tool server outside explore's command; it reports each commit to `sidecar`, unless null. */
async function startToolServer(sidecar: string | null): Promise<{ url: string; commits: () => number }> {
  const effects = sidecar === null ? null : new ToolstormEffects({ sidecarUrl: sidecar })
  let commits = 0
  const server = closingServer(
    http.createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        commits++
        void (effects?.report(req.headers, 'shipment', 'order-7') ?? Promise.resolve(true)).then(() => {
          res.writeHead(201, { 'content-type': 'application/json' }).end(`{"id":"ship-${commits}"}`)
        })
      })
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, commits: () => commits }
}

async function agentFile(): Promise<string> {
  const file = path.join(await temporaryFolder('toolstorm-explore-agent-'), 'agent.mjs')
  await writeFile(file, AGENT)
  return file
}

describe('explore: the commits the tool side reports', { timeout: 120_000 }, () => {
  it('takes the effects of a tool server started outside the command at --admin-port, and fails the duplicate they show', async () => {
    const adminPort = await freePort()
    const tools = await startToolServer(`http://127.0.0.1:${adminPort}`)
    const out = path.join(await temporaryFolder('toolstorm-explore-out-'), 'counterexamples')
    const explored = await exploreCli(['--target', tools.url, '--admin-port', String(adminPort), '--faults', 'response_lost', '--out', out], [process.execPath, await agentFile()])
    const result = explored.result!
    expect(result.baseline.effects, explored.stderr).toBe(1)
    const lost = result.variations.find((variation) => describeOf(variation) === 'response_lost on POST /ship #1')!
    expect(lost.status).toBe('fail')
    expect(lost.failed.map((failure) => failure.detail)).toEqual([expect.stringContaining('1 duplicate effect(s) across 2 commits')])
    expect(explored.code).toBe(1)
    expect(explored.stdout).not.toContain('no commit was reported')
    // The counterexample's live rerun listens where the tool server reports.
    const saved = JSON.parse(await readFile(path.join(out, lost.id, 'variation.json'), 'utf8')) as { reproduce: { live: string } }
    expect(saved.reproduce.live).toContain(`--admin-port ${adminPort}`)
  })

  it('fails a lost answer on a write whose commits nobody reports as unjudged, and says so at the baseline', async () => {
    const tools = await startToolServer(null)
    const explored = await exploreCli(['--target', tools.url, '--faults', 'response_lost'], [process.execPath, await agentFile()])
    const result = explored.result!
    expect(result.baseline.effects).toBe(0)
    const lost = result.variations.find((variation) => describeOf(variation) === 'response_lost on POST /ship #1')!
    // The agent exited 0 and the tool server committed twice: no commit reported must not read as none duplicated.
    expect(tools.commits()).toBeGreaterThanOrEqual(3)
    expect(lost.exit.code).toBe(0)
    expect(lost.status).toBe('fail')
    expect(lost.failed).toEqual([{ check: 'No duplicate side effects', detail: expect.stringMatching(/no effect was reported in this run, yet call \S+ \(POST \/ship\) lost its answer after its upstream answered it/) }])
    expect(explored.stdout).toMatch(/^baseline: 1 call\(s\), 0 effect\(s\), [\d.]+ s: PASS \(it wrote, and no commit was reported: a write whose answer is lost fails, unjudged; \S+explore\.md#the-tool-sides-commits\)$/m)
    expect(explored.code).toBe(1)
  })
})
