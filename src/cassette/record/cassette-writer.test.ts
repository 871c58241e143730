import { describe, expect, it } from 'vitest'
import { createStorm } from '../../create-storm.js'
import type { StoredEffect } from '../format/cassette-schema.js'
import { createCassetteRecorder } from './cassette-recorder.js'
import { CassetteWriter } from './cassette-writer.js'
import { exchangeAt } from '../../../test/helpers/cassette-fixtures.js'
import { collectGarbage } from '../../../test/helpers/collected.js'

const effect = (key: string): StoredEffect => ({ name: 'shipment', key, at: 1, identity: 1, redacted: false })

/** Whether `value` is still referenced after full collections (it is held only weakly here). */
async function retained(ref: WeakRef<object>): Promise<boolean> {
  for (let attempt = 0; attempt < 5; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 10))
    collectGarbage()
    if (ref.deref() === undefined) return false
  }
  return true
}

describe('CassetteWriter in memory: effects reported after a line', () => {
  it('keeps them on a line it holds, and drops those for a line it does not hold (a flight recorder keeps none; a forgotten run\'s are gone)', async () => {
    const { header } = await createCassetteRecorder(createStorm({})).cassette()
    const writer = new CassetteWriter({ header: (count) => ({ ...header, exchanges: count }) })
    await writer.append(exchangeAt(1, { run: 'w1' }), 'w1')
    await writer.append(exchangeAt(2, { run: 'w2', call: 1, ordinal: 1 }), 'w2')
    expect(writer.forget('w1')).toBe(1)
    const forgotten = { effect: effect('o-1') }
    await writer.lateEffects(1, [forgotten.effect])
    await writer.lateEffects(2, [effect('o-2')])
    expect((await writer.cassette()).exchanges.map((exchange) => [exchange.run, exchange.effects.map(({ key }) => key)])).toEqual([['w2', ['o-2']]])
    const ref = new WeakRef(forgotten.effect)
    delete (forgotten as { effect?: StoredEffect }).effect
    expect(await retained(ref)).toBe(false)

    const flight = new CassetteWriter({ header: () => header, memory: false })
    await flight.append(exchangeAt(1), 'default')
    const late = { effect: effect('o-3') }
    await flight.lateEffects(1, [late.effect])
    const lateRef = new WeakRef(late.effect)
    delete (late as { effect?: StoredEffect }).effect
    expect(await retained(lateRef)).toBe(false)
  })
})
