import { describe, expect, it } from 'vitest'
import { createStorm } from '../storm.js'

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
