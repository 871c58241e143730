import { describe, expect, it } from 'vitest'
import { ContractFailedError } from '../errors.js'
import { createStorm } from '../engine/storm.js'
import { VirtualClock } from '../engine/clock.js'
import { contract } from './contract.js'
import { duplicateEffects, formatDuplicateEffects } from '../engine/contracts/duplicate-effects.js'

function stormWithCalls() {
  const clock = new VirtualClock()
  const storm = createStorm({ rules: [{ name: 'lost', route: 'POST /ship', kind: 'response_lost', calls: [1] }, { name: 'missing', route: 'POST /shp', kind: 'timeout' }] }, { clock })
  const ship = () => storm.begin({ method: 'POST', url: new URL('http://t.test/ship'), headers: {} })
  const a = ship()
  a.markExecuted()
  storm.effect('receipt', 'a', { call: a.id })
  a.markInjected()
  a.finish('reset', null)
  const b = ship()
  b.markExecuted()
  storm.effect('receipt', 'a', { call: b.id })
  b.finish('response', 201)
  const c = ship()
  c.markExecuted()
  storm.effect('receipt', 'b', { call: c.id })
  c.finish('response', 201)
  return storm
}

describe('contracts', () => {
  it('fail when empty', () => {
    const c = contract(createStorm().report())
    expect(c.passed).toBe(false)
    expect(() => c.assertValid()).toThrow('An empty contract cannot establish correctness. Add at least one check.')
  })

  it('flag a rule that never triggered, such as a misspelled route', () => {
    const result = contract(stormWithCalls().report()).requireTriggered().toJSON()
    expect(result.checks).toEqual([
      { name: 'Fault exercised: lost', passed: true, detail: 'Triggered 1 time(s)' },
      { name: 'Fault exercised: missing', passed: false, detail: 'Triggered 0 time(s); never eligible: no call was on a route matching "POST /shp" (routes seen: POST /ship ×3); the closest route seen is "POST /ship"' },
    ])
    expect(contract(stormWithCalls().report()).requireTriggered('nonexistent').passed).toBe(false)
  })

  it('say why a rule never fired: no such rule, or calls on its route but none at its ordinals', () => {
    expect(contract(stormWithCalls().report()).requireTriggered('nonexistent').checks[0]?.detail).toBe('Triggered 0 time(s); no rule is named "nonexistent" (rules: lost, missing)')
    const storm = createStorm({ rules: [{ name: 'late', route: 'POST /*', kind: 'timeout', calls: [4, 5] }] })
    for (let i = 0; i < 3; i++) storm.begin({ method: 'POST', url: new URL('http://t.test/ship'), headers: {} }).finish('response', 200)
    expect(contract(storm.report()).requireTriggered().checks[0]?.detail).toBe('Triggered 0 time(s); never eligible: 3 call(s) on routes matching "POST /*", none at the ordinals in its "calls" (4, 5)')
  })

  it('name each duplicated effect with its key and calls', () => {
    expect(formatDuplicateEffects(duplicateEffects(stormWithCalls().report()))).toEqual(['receipt key "a" committed 2 times (calls 1, 2)'])
  })

  it('count duplicate effects by identity', () => {
    expect(contract(stormWithCalls().report()).noDuplicateEffects().checks).toEqual([{ name: 'No duplicate side effects', passed: false, detail: '1 duplicate effect(s) across 3 commits' }])
  })

  it('bound calls overall and per route, and effects by name and key', () => {
    const report = stormWithCalls().report()
    const result = contract(report).atMostCalls(3).atMostCalls(2, { route: 'POST /ship' }).atMostEffects('receipt', 2).atMostEffects('receipt', 2, { key: 'a' }).toJSON()
    expect(result.checks.map((check) => [check.name, check.passed, check.detail])).toEqual([
      ['Call budget', true, '3 / 3 calls'],
      ['Call budget: POST /ship', false, '3 / 2 calls'],
      ['Effect budget: receipt', false, '3 / 2 committed effects'],
      ['Effect budget: receipt', true, '2 / 2 committed effects'],
    ])
  })

  it('fail a route budget the calls past the listed 10,000 could exceed: their routes are unknown', () => {
    const report = { ...stormWithCalls().report(), droppedCalls: 5 }
    expect(contract(report).atMostCalls(3, { route: 'POST /ship' }).checks[0]).toEqual({
      name: 'Call budget: POST /ship',
      passed: false,
      detail: '3 / 3 calls, but 5 call(s) past the 10,000 a report lists were not itemized, so the route\'s count is unknown',
    })
    expect(contract(report).atMostCalls(8, { route: 'POST /ship' }).passed).toBe(true)
  })

  it('fail closed on effect budgets when any effect was redacted', () => {
    const storm = createStorm({ redact: { keys: [], secrets: ['s3cret-key-value'] } })
    const a = storm.begin({ method: 'POST', url: new URL('http://t.test/ship'), headers: {} })
    storm.effect('receipt', 's3cret-key-value', { call: a.id })
    expect(contract(storm.report()).atMostEffects('receipt', 5).checks[0]).toEqual({
      name: 'Effect budget: receipt',
      passed: false,
      detail: 'Cannot filter redacted effect identities; use nonsecret identifiers',
    })
  })

  it('list every failing check when asserted, naming the duplicated keys and the calls over the budget as toolstorm check does', () => {
    const c = contract(stormWithCalls().report()).requireTriggered().noDuplicateEffects().atMostCalls(1)
    expect(() => c.assertValid()).toThrow(ContractFailedError)
    expect(() => c.assertValid()).toThrow(
      [
        'toolstorm contract failed',
        'Fault exercised: missing: Triggered 0 time(s); never eligible: no call was on a route matching "POST /shp" (routes seen: POST /ship ×3); the closest route seen is "POST /ship"',
        'No duplicate side effects: 1 duplicate effect(s) across 3 commits',
        '    receipt key "a" committed 2 times (calls 1, 2)',
        'Call budget: 3 / 1 calls',
        '    call 1  POST /ship  reset  [lost]',
        '    call 2  POST /ship  response 201',
        '    call 3  POST /ship  response 201',
      ].join('\n'),
    )
    // What it names stays out of the checks (toJSON and `toolstorm check --json` keep their shape).
    for (const check of c.toJSON().checks) expect(Object.keys(check)).toEqual(['name', 'passed', 'detail'])
  })

  it('count refusals in the overall call budget', () => {
    const storm = createStorm({ maxCalls: 1 })
    storm.begin({ method: 'GET', url: new URL('http://t.test/a'), headers: {} })
    storm.begin({ method: 'GET', url: new URL('http://t.test/a'), headers: {} })
    expect(contract(storm.report()).atMostCalls(1).checks[0]?.detail).toBe('2 / 1 calls')
    expect(contract(storm.report()).atMostCalls(1, { route: 'GET /a' }).checks[0]?.detail).toBe('1 / 1 calls')
  })

  it('flag a retry made before the advertised Retry-After', () => {
    const clock = new VirtualClock()
    const storm = createStorm({ rules: [{ name: 'busy', route: 'GET /x', kind: 'rate_limit', calls: [1], delay: 0.6 }] }, { clock })
    const first = storm.begin({ method: 'GET', url: new URL('http://t.test/x'), headers: {} })
    first.markInjected(0.6)
    first.finish('response', 429)
    clock.advance(0.5)
    storm.begin({ method: 'GET', url: new URL('http://t.test/x'), headers: {} }).finish('response', 200)
    expect(contract(storm.report()).retryAfterRespected().checks[0]).toEqual({ name: 'Retry-after respected', passed: false, detail: '1 retry(s) occurred before the advertised delay' })
    clock.advance(1)
  })

  it('reject a non-boolean custom condition and negative limits with ERR_CONFIG_INVALID', () => {
    const c = contract(createStorm().report())
    const invalid = (message: string) => expect.objectContaining({ name: 'ConfigError', code: 'ERR_CONFIG_INVALID', message })
    expect(() => c.check('x', 1 as unknown as boolean)).toThrow(invalid('Failed to add a contract check: the condition must be a boolean.'))
    expect(() => c.atMostCalls(-1)).toThrow(invalid('Failed to add a contract check: Call limit must be a nonnegative integer.'))
    expect(() => c.atMostEffects('x', 1.5)).toThrow(invalid('Failed to add a contract check: Effect limit must be a nonnegative integer.'))
  })
})
