import { describe, expect, it } from 'vitest'
import { createStorm } from '../storm.js'
import { decide } from '../decision.js'

const url = (path: string) => new URL(`http://tools.test${path}`)

function call(storm: ReturnType<typeof createStorm>, method: string, path: string, headers: Record<string, string> = {}) {
  const exchange = storm.begin({ method, url: url(path), headers })
  return exchange
}

describe('rule selection', () => {
  it('counts ordinals per route name, so other routes never shift a schedule', () => {
    const rules = [{ name: 'flaky', route: 'GET /read', kind: 'timeout' as const, probability: 0.5 }]
    const quiet = createStorm({ seed: 981, rules })
    const noisy = createStorm({ seed: 981, rules })
    const a: boolean[] = []
    const b: boolean[] = []
    for (let i = 0; i < 40; i++) {
      a.push(call(quiet, 'GET', '/read').rule !== null)
      call(noisy, 'POST', '/other')
      b.push(call(noisy, 'GET', '/read').rule !== null)
    }
    expect(a).toEqual(b)
    expect(a).toContain(true)
    expect(a).toContain(false)
  })

  it('draws on the x-toolstorm-key header, so reordered keyed calls get the same decisions', () => {
    const rules = [{ name: 'flaky', route: 'GET /lookup', kind: 'timeout' as const, probability: 0.5 }]
    const keys = Array.from({ length: 100 }, (_, i) => `request-${i}`)
    const forward = createStorm({ seed: 981, rules })
    const backward = createStorm({ seed: 981, rules })
    const decided = new Map<string, boolean>()
    for (const key of keys) decided.set(key, call(forward, 'GET', '/lookup', { 'x-toolstorm-key': key }).rule !== null)
    for (const key of [...keys].reverse()) {
      call(backward, 'POST', '/noise')
      expect(call(backward, 'GET', '/lookup', { 'x-toolstorm-key': key }).rule !== null).toBe(decided.get(key))
    }
    expect(new Set(decided.values()).size).toBe(2)
  })

  it('selects the first eligible rule and counts later ones as eligible only', () => {
    const storm = createStorm({
      rules: [
        { name: 'first', route: 'GET /t', kind: 'timeout', limit: 1 },
        { name: 'second', route: 'GET /t', kind: 'replace', replacement: 'fallback' },
      ],
    })
    expect(call(storm, 'GET', '/t').rule?.name).toBe('first')
    expect(call(storm, 'GET', '/t').rule?.name).toBe('second')
    const report = storm.report()
    expect(report.coverage).toEqual({ first: { eligible: 2, selected: 1, triggered: 0 }, second: { eligible: 2, selected: 1, triggered: 0 } })
  })

  it('applies calls filters to per-route ordinals', () => {
    const storm = createStorm({ rules: [{ name: 'second-only', route: 'GET /t', kind: 'unavailable', calls: [2] }] })
    expect([1, 2, 3].map(() => call(storm, 'GET', '/t').rule?.name ?? null)).toEqual([null, 'second-only', null])
    expect(storm.report().coverage['second-only']).toEqual({ eligible: 1, selected: 1, triggered: 0 })
  })

  it('names requests after the first declared route they match, else METHOD /path', () => {
    const storm = createStorm({ routes: { check_inventory: 'GET /inventory/:sku', anything: '* /inventory/*' }, rules: [] })
    expect(call(storm, 'GET', '/inventory/CLOUD-01?x=1').record?.route).toBe('check_inventory')
    expect(call(storm, 'DELETE', '/inventory/CLOUD-01').record?.route).toBe('anything')
    expect(call(storm, 'POST', '/shipments?debug=1').record?.route).toBe('POST /shipments')
  })

  it('gives a reused key its own distinct key so each attempt draws on its own', () => {
    const storm = createStorm({ rules: [] })
    const keys = [1, 2, 3].map(() => call(storm, 'POST', '/ship', { 'x-toolstorm-key': 'order-17' }).rawKey)
    expect(keys).toEqual(['order-17', 'order-17#2', 'order-17#3'])
  })

  it('refuses calls beyond the budget without an ordinal and counts the refusal', () => {
    const storm = createStorm({ maxCalls: 1, rules: [{ name: 'r', route: '*', kind: 'timeout' }] })
    expect(call(storm, 'GET', '/a').refused).toBe(false)
    expect(call(storm, 'GET', '/a').refused).toBe(true)
    const report = storm.report()
    expect(report.calls).toHaveLength(1)
    expect(report.budgetRejections).toBe(1)
    expect(report.coverage.r).toEqual({ eligible: 1, selected: 1, triggered: 0 })
  })

  it('matches the decision function for every call', () => {
    const storm = createStorm({ seed: 5, rules: [{ name: 'half', route: 'GET /x', kind: 'timeout', probability: 0.5 }] })
    for (let i = 1; i <= 30; i++) expect(call(storm, 'GET', '/x').rule !== null).toBe(decide(5, 'half', 'GET /x', `#${i}`, 0.5))
  })

  it('keeps runs apart: each run has its own ordinals and coverage', () => {
    const storm = createStorm({ rules: [{ name: 'once', route: 'GET /x', kind: 'timeout', calls: [1] }] })
    expect(call(storm, 'GET', '/x', { 'x-toolstorm-run': 'a' }).rule?.name).toBe('once')
    expect(call(storm, 'GET', '/x', { 'x-toolstorm-run': 'b' }).rule?.name).toBe('once')
    expect(call(storm, 'GET', '/x', { 'x-toolstorm-run': 'a' }).rule).toBeNull()
    expect(storm.report('a').calls).toHaveLength(2)
    expect(storm.report('b').calls).toHaveLength(1)
    expect(storm.report('default').calls).toHaveLength(0)
  })
})
