import { describe, expect, it } from 'vitest'
import { CallDecider, kernelFaults, parseConfig } from '../call-decider.js'
import { VirtualClock } from '../clock.js'
import { unjudgedClaims } from '../evidence/claims-judge.js'
import { protocolHooksOf } from '../protocol-hooks.js'
import { createStorm } from '../storm.js'
import { MemoryLedger } from './memory-ledger.js'

const call = (storm: ReturnType<typeof createStorm>, run = 'r1') => {
  const exchange = storm.begin({ method: 'POST', url: new URL('http://tool.test/ship'), headers: { 'x-toolstorm-run': run } })
  exchange.finish('response', 200)
  return exchange
}

describe('the memory ledger as a feed', () => {
  it('gives a follower each effect once, after its cursor, with the run’s counters', async () => {
    const storm = createStorm({ rules: [{ name: 'boom', route: 'POST /ship', kind: 'unavailable', calls: [2] }] })
    const first = call(storm)
    const snapshot = await storm.ledger.feedSnapshot('r1')
    expect(snapshot.exists).toBe(true)
    expect(snapshot.report.calls).toHaveLength(1)
    storm.effect('shipment', 'o-1', { call: first.id })
    call(storm)
    const changes = await storm.ledger.feedChanges('r1', snapshot.cursor)
    expect(changes.reset).toBe(false)
    expect(changes.effects.map((effect) => effect.key)).toEqual(['o-1'])
    expect(changes.stats.calls).toBe(2)
    expect(changes.coverage.boom?.selected).toBe(1)
    const again = await storm.ledger.feedChanges('r1', changes.cursor)
    expect(again.effects).toEqual([])
  })

  it('follows a run that began after the snapshot, and reports a reset run as a reset', async () => {
    const storm = createStorm({})
    const empty = await storm.ledger.feedSnapshot('r1')
    expect(empty.exists).toBe(false)
    expect(empty.report.run).toBe('r1')
    storm.effect('shipment', 'o-1', { call: call(storm).id })
    const begun = await storm.ledger.feedChanges('r1', empty.cursor)
    expect(begun.reset).toBe(false)
    expect(begun.effects).toHaveLength(1)
    storm.reset('r1')
    call(storm)
    expect((await storm.ledger.feedChanges('r1', begun.cursor)).reset).toBe(true)
  })
})

describe('the memory ledger given a decider, not a storm', () => {
  const decider = (config: unknown) => new CallDecider(parseConfig(config), new VirtualClock(), kernelFaults, protocolHooksOf([]), unjudgedClaims)

  it('begins, reports and records effects by what the decider decides, and routes claims with its claim router', async () => {
    const rules = decider({ rules: [{ name: 'second', route: 'POST /ship', kind: 'unavailable', calls: [2] }] })
    const ledger = new MemoryLedger(rules)
    const begin = () => ledger.begin({ method: 'POST', url: new URL('http://tool.test/ship'), headers: { 'x-toolstorm-run': 'r1' } })
    const first = begin()
    first.finish('response', 200)
    expect(begin().rule?.name).toBe('second')
    expect((await ledger.effect('shipment', 'o-1', first.id)).call).toBe(1)
    // The decider's active run is where a claim naming an unknown run goes.
    rules.activeRun = 'r1'
    expect((await ledger.addClaim({ run: 'typo', tool: 'ship', toolCallId: null, status: 'success', source: 'api', traceId: null, spanId: null })).run).toBe('r1')
    const report = await ledger.report('r1')
    expect(report.calls.map((call) => call.fault)).toEqual([null, 'second'])
    expect(report.effects.map((effect) => effect.key)).toEqual(['o-1'])
    expect(report.claims?.map((claim) => claim.tool)).toEqual(['ship'])
  })

  it("decides a run's calls by the rules the decider gives it, once they are synced to the run", () => {
    const rules = decider({})
    const ledger = new MemoryLedger(rules)
    const begin = () => ledger.begin({ method: 'POST', url: new URL('http://tool.test/ship'), headers: { 'x-toolstorm-run': 'own' } })
    expect(begin().rule).toBeNull()
    rules.setRunConfig('own', parseConfig({ rules: [{ name: 'own', route: 'POST /ship', kind: 'timeout' }] }))
    ledger.syncRules('own')
    expect(begin().rule?.name).toBe('own')
    expect(ledger.reportNow('own').coverage).toEqual({ own: { eligible: 1, selected: 1, triggered: 0 } })
  })
})

describe('the exchanges the memory ledger remembers for late effects', () => {
  // An exchange id ends in 8 random base64url characters, which may include "-".
  const forge = (id: string) => id.slice(0, -8) + (id.endsWith('AAAAAAAA') ? 'BBBBBBBB' : 'AAAAAAAA')

  it('takes an effect for any of the last 4096 calls begun, refuses an older one, and refuses an id whose random part is wrong', async () => {
    const storm = createStorm({})
    const oldest = call(storm)
    const kept = call(storm)
    for (let i = 0; i < 4095; i++) call(storm)
    // 4097 calls: the first has been overwritten, the second is the oldest one kept.
    await expect(storm.ledger.effect('shipment', 'o-0', oldest.id)).rejects.toMatchObject({ code: 'ERR_EFFECT_INVALID' })
    expect((await storm.ledger.effect('shipment', 'o-1', kept.id)).call).toBe(2)
    const forged = forge(kept.id)
    await expect(storm.ledger.effect('shipment', 'o-2', forged)).rejects.toMatchObject({ code: 'ERR_EFFECT_INVALID' })
    for (const id of ['', 'x', `${kept.id}-1`, kept.id.slice(0, -1), kept.id.replace(/-[0-9a-z]+-/, '-zzzzzzzzzzzzzzzzzzzz-')]) {
      await expect(storm.ledger.effect('shipment', 'o-3', id)).rejects.toMatchObject({ code: 'ERR_EFFECT_INVALID' })
    }
  })

  it("forgets a reset run's exchanges and keeps the other runs'", async () => {
    const storm = createStorm({})
    const a = call(storm, 'a')
    const b = call(storm, 'b')
    storm.reset('a')
    await expect(storm.ledger.effect('shipment', 'o-a', a.id)).rejects.toMatchObject({ code: 'ERR_EFFECT_INVALID' })
    expect((await storm.ledger.effect('shipment', 'o-b', b.id)).key).toBe('o-b')
  })

  it("keeps a call's exchange as the parent of calls made under it", () => {
    const storm = createStorm({})
    const parent = storm.begin({ method: 'POST', url: new URL('http://tool.test/agent'), headers: { 'x-toolstorm-run': 'r1' } })
    const child = storm.begin({ method: 'POST', url: new URL('http://tool.test/ship'), headers: { 'x-toolstorm-run': 'r1', 'x-toolstorm-call': parent.id } })
    expect(child.record?.parent).toBe(parent.record?.id)
    const stranger = storm.begin({ method: 'POST', url: new URL('http://tool.test/ship'), headers: { 'x-toolstorm-run': 'r1', 'x-toolstorm-call': forge(parent.id) } })
    expect(stranger.record?.parent).toBeNull()
  })
})
