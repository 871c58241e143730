/**
 * `toolstorm check` on a report that holds claims: the `claimsMatchEffects` contract runs by
 * default, and a silent commit or a phantom success fails the run. The report comes from a real
 * proxy under real faults, with the agent's account posted through `reportClaim()`.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fetch as undiciFetch } from 'undici'
import { describe, expect, it } from 'vitest'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import type { Report } from '../../src/engine/schema/report.js'
import { runCli } from '../helpers/cli.js'
import { startProxied, type Proxied } from '../helpers/proxied.js'
import { closing, temporaryFolder } from '../helpers/teardown.js'

/** A run where the agent's account of three shipments is wrong twice: one lost answer, one replaced. */
async function contradictedRun(): Promise<{ env: Proxied; report: Report }> {
  const env = closing(await startProxied('reverse', {
    seed: 3,
    commits: ['POST /ship'],
    rules: [
      { name: 'lost-ack', route: 'POST /ship', kind: 'response_lost', calls: [1] },
      { name: 'fake-ok', route: 'POST /ship', kind: 'replace', calls: [3], status: 201, replacement: { shipment: 99 } },
    ],
  }))
  const agent = new ToolstormEffects({ sidecarUrl: env.proxy.adminUrl, token: env.proxy.token })
  for (const order of ['o-1', 'o-2', 'o-3']) {
    const ok = await undiciFetch(`${env.base}/ship`, { method: 'POST', body: JSON.stringify({ order }) }).then(
      async (response) => (await response.text(), response.ok),
      () => false,
    )
    await agent.claim({ tool: 'POST /ship', status: ok ? 'success' : 'failure' })
  }
  return { env, report: await env.report() }
}

describe('toolstorm check with claims', () => {
  it('fails a report whose claims the effects contradict, naming each, unless --no-claims', async () => {
    const { report } = await contradictedRun()
    expect(report.claims?.map((c) => c.verdict)).toEqual(['silent_commit', 'confirmed', 'phantom_success'])
    const dir = await temporaryFolder('toolstorm-claims-')
    const file = path.join(dir, 'report.json')
    await writeFile(file, JSON.stringify(report))
    const result = await runCli(['check', file])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain(
      '✗ Claims match effects: 2 of 3 claim(s) contradicted by the effects (#1 POST /ship failure: silent_commit; #3 POST /ship success: phantom_success)\n    #1 POST /ship failure: silent_commit (call 1; shipment "o-1")\n    #3 POST /ship success: phantom_success (call 3)\n',
    )
    const skipped = await runCli(['check', file, '--no-claims'])
    expect(skipped.stdout).not.toContain('Claims match effects')
    expect(skipped.code).toBe(0)
  })

  it('toolstorm inspect counts the claims by verdict and lists those the effects contradict', async () => {
    const { report } = await contradictedRun()
    const dir = await temporaryFolder('toolstorm-claims-')
    const file = path.join(dir, 'report.json')
    await writeFile(file, JSON.stringify(report))
    const result = await runCli(['inspect', file])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('  claims: 3 (silent_commit 1, confirmed 1, phantom_success 1)\n    #1 POST /ship failure: silent_commit (calls 1)\n    #3 POST /ship success: phantom_success (calls 3)\n')
    const json = JSON.parse((await runCli(['inspect', file, '--json'])).stdout) as { claims: { total: number; verdicts: Record<string, number> } }
    expect(json.claims).toMatchObject({ total: 3, verdicts: { silent_commit: 1, confirmed: 1, phantom_success: 1 } })
  })

  it('judges again from the calls and effects, not from the verdict stored in the file', async () => {
    const { report } = await contradictedRun()
    // A forged file: every verdict rewritten to "confirmed".
    const forged = { ...report, claims: report.claims?.map((claim) => ({ ...claim, verdict: 'confirmed' as const })) }
    const dir = await temporaryFolder('toolstorm-claims-')
    const file = path.join(dir, 'forged.json')
    await writeFile(file, JSON.stringify(forged))
    const result = await runCli(['check', file, '--json'])
    expect(result.code).toBe(1)
    const parsed = JSON.parse(result.stdout) as { checks: Array<{ name: string; passed: boolean }> }
    expect(parsed.checks.find((check) => check.name === 'Claims match effects')?.passed).toBe(false)
  })

  it('runs through POST /contract as the Python package sends it', async () => {
    const { env } = await contradictedRun()
    const response = await env.admin('/contract', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ checks: [{ type: 'claimsMatchEffects' }] }) })
    expect(response.status).toBe(200)
    const result = (await response.json()) as { passed: boolean; checks: Array<{ detail: string }> }
    expect(result.passed).toBe(false)
    expect(result.checks[0]?.detail).toContain('2 of 3 claim(s) contradicted')
  })
})
