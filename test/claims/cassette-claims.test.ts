/**
 * Claims in the cassette (version 3): the recorded run's claims, judged when the cassette is
 * written, kept in its header and listed by `toolstorm inspect`; older cassettes still load.
 */
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fetch as undiciFetch } from 'undici'
import { describe, expect } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { exportHar } from '../../src/cassette/har/har-export.js'
import { importHar } from '../../src/cassette/har/har-import.js'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import { ROOT, runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'
import { startProxied } from '../helpers/proxied.js'

const LOST_ACK = { seed: 1, rules: [{ name: 'lost-ack', route: 'POST /ship', kind: 'response_lost' as const, calls: [1] }] }
const OLD_CASSETTE = path.join(ROOT, 'fixtures/cassettes/v2-before-claims.cassette.jsonl')

describe('claims in the cassette', () => {
  it('records the agent’s claims with their verdicts, calls and effect keys, and inspect lists the silent commit', async ({ dir }) => {
    const file = path.join(dir, 'claims.cassette.jsonl')
    const env = await startProxied('reverse', LOST_ACK, { record: file })
    try {
      const agent = new ToolstormEffects({ sidecarUrl: env.proxy.adminUrl, token: env.proxy.token })
      // The agent ships, concludes from the answer it got, and retries once on failure.
      for (let attempt = 1; attempt <= 2; attempt++) {
        const ok = await undiciFetch(`${env.base}/ship`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order: 'o-1' }) }).then(
          async (response) => (await response.text(), response.ok),
          () => false,
        )
        expect(await agent.claim({ tool: 'POST /ship', status: ok ? 'success' : 'failure', toolCallId: `call_${attempt}` })).toBe(true)
        if (ok) break
      }
    } finally {
      await env.close()
    }
    const cassette = await Cassette.load(file)
    expect(cassette.header.version).toBe(4)
    expect(cassette.header.claims?.map((c) => [c.run, c.toolCallId, c.status, c.verdict, c.calls, c.effects.map((e) => [e.call, e.key.length > 0])])).toEqual([
      ['default', 'call_1', 'failure', 'silent_commit', [1], [[1, true]]],
      ['default', 'call_2', 'success', 'confirmed', [2], [[2, true]]],
    ])
    // Reports made from the cassette (inspect, check) carry them as the run's report did.
    expect(cassette.toReports()[0]?.claims?.map((c) => c.verdict)).toEqual(['silent_commit', 'confirmed'])
    const inspect = await runCli(['inspect', file])
    expect(inspect.stderr).toBe('')
    expect(inspect.code).toBe(0)
    expect(inspect.stdout).toContain('claims: 2 (')
    expect(inspect.stdout).toContain('#1 POST /ship failure: silent_commit (calls 1)')
    // Saved again (a copy, replay --update), the claims stay as recorded.
    const copy = path.join(dir, 'copy.cassette.jsonl')
    await cassette.save(copy)
    expect((await Cassette.load(copy)).header.claims).toEqual(cassette.header.claims)
    // And through HAR (the header rides in the log's _toolstorm field) and back.
    expect((await importHar(JSON.parse(JSON.stringify(exportHar(cassette))))).header.claims).toEqual(cassette.header.claims)
  })

  it('still loads a version 2 cassette without claims, and refuses claims in a header older than version 3', async ({ dir }) => {
    const old = await Cassette.load(OLD_CASSETTE)
    expect(old.header.version).toBe(2)
    expect(old.header.claims).toBeUndefined()
    expect(old.toReports()[0]?.claims).toBeUndefined()
    const inspect = await runCli(['inspect', OLD_CASSETTE])
    expect(inspect.code).toBe(0)
    expect(inspect.stdout).not.toContain('claims:')
    const text = await readFile(OLD_CASSETTE, 'utf8')
    const [header, ...rest] = text.split('\n')
    const claim = { run: 'default', id: 1, tool: 't', toolCallId: null, status: 'success', verdict: 'unverified', join: 'order', source: 'api', at: 0, traceId: null, spanId: null, calls: [], effects: [], commits: false }
    const forged = path.join(dir, 'forged.cassette.jsonl')
    await writeFile(forged, [JSON.stringify({ ...JSON.parse(header as string), claims: [claim] }), ...rest].join('\n'))
    await expect(Cassette.load(forged)).rejects.toMatchObject({ code: 'ERR_CASSETTE_INVALID', message: expect.stringContaining('$.claims: claims in the header need cassette version 3') })
  })
})
