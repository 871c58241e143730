import { describe, expect, it } from 'vitest'
import { ReportError } from '../errors.js'
import { createStorm } from '../create-storm.js'
import { validateReport } from './validate-report.js'

function sampleReport() {
  const storm = createStorm({ rules: [{ name: 'busy', route: 'GET /x', kind: 'rate_limit', calls: [1], delay: 1 }, { name: 'never', route: 'GET /y', kind: 'timeout' }] })
  const a = storm.begin({ method: 'GET', url: new URL('http://t.test/x'), headers: {} })
  a.markInjected(1)
  a.finish('response', 429)
  const b = storm.begin({ method: 'GET', url: new URL('http://t.test/x'), headers: {} })
  b.markExecuted()
  storm.effect('read', 'k', { call: b.id })
  b.finish('response', 200)
  return JSON.parse(JSON.stringify(storm.report()))
}

describe('report validation', () => {
  it('accepts a report the engine wrote', () => {
    expect(validateReport(sampleReport()).calls).toHaveLength(2)
  })

  it.each([
    ['forged coverage', (r: any) => (r.coverage.never.triggered = 1, r.coverage.never.selected = 1, r.coverage.never.eligible = 1), '$.coverage["never"]: coverage disagrees with the recorded calls (recomputed 0/0/0)'],
    ['non-contiguous ids', (r: any) => (r.calls[1].id = 5), '$.calls[1].id: expected 2 (ids are contiguous)'],
    ['a wrong ordinal', (r: any) => (r.calls[1].ordinal = 3), '$.calls[1].ordinal: expected 2'],
    ['an invented fault reference', (r: any) => (r.calls[1].fault = 'invented', r.calls[1].kind = 'timeout'), '$.calls[1].fault: expected the name of a rule, got "invented"'],
    ['an effect on an unexecuted call', (r: any) => (r.effects[0].call = 1), '$.effects[0].call: a call that never reached the upstream cannot commit an effect'],
    ['a skipped identity', (r: any) => (r.effects[0].identity = 2), '$.effects[0].identity: expected 1'],
    ['a cut without an injected fault', (r: any) => (r.calls[1].cut = { events: 1, bytes: 10 }), '$.calls[1].cut: a cut stream needs an injected stream fault'],
    ['an unknown top-level key', (r: any) => (r.extra = 1), '$: unknown field "extra"'],
    ['a wrong version', (r: any) => (r.version = 2), '$.version: expected report version 1'],
    ['a probability-zero rule that was selected', (r: any) => (r.rules[0].probability = 0), 'a probability-zero rule cannot be selected'],
  ])('rejects %s with the JSON path', (_name, mutate, message) => {
    const report = sampleReport()
    mutate(report)
    expect(() => validateReport(report, 'incident.json')).toThrow(ReportError)
    expect(() => validateReport(report, 'incident.json')).toThrow(message)
  })
})

describe('report validation after the rules changed mid-run', () => {
  const call = (storm: ReturnType<typeof createStorm>, path: string, inject = false) => {
    const exchange = storm.begin({ method: 'GET', url: new URL(`http://t.test${path}`), headers: {} })
    if (inject && exchange.rule) exchange.markInjected(1)
    exchange.finish('response', inject ? 429 : 200)
  }

  /** Rules A for two calls, then rules B (A gone, a rule on every /x call added) for two more, then A's rule again for one. */
  function changedReport() {
    const first = { name: 'model-429', route: 'GET /x', kind: 'rate_limit' as const, calls: [1], delay: 1 }
    const storm = createStorm({ rules: [first] })
    call(storm, '/x', true)
    call(storm, '/x')
    storm.setConfig(createStorm({ rules: [{ name: 'every-x', route: 'GET /x', kind: 'rate_limit', delay: 1 }] }).config)
    call(storm, '/x', true)
    call(storm, '/y')
    // The same rules again change nothing; another set with no call under it is not kept.
    storm.setConfig(storm.config)
    storm.setConfig(createStorm({ rules: [{ name: 'unused', route: 'GET /z', kind: 'timeout' }] }).config)
    storm.setConfig(createStorm({ rules: [first] }).config)
    call(storm, '/x')
    return JSON.parse(JSON.stringify(storm.report()))
  }

  it('keeps the rules every call began under, and validates', () => {
    const report = changedReport()
    expect(report.earlierRules.map((set: { from: number; to: number; rules: Array<{ name: string }> }) => [set.from, set.to, set.rules.map((rule) => rule.name)])).toEqual([
      [1, 2, ['model-429']],
      [3, 4, ['every-x']],
    ])
    expect(report.rules.map((rule: { name: string }) => rule.name)).toEqual(['model-429'])
    // every-x was eligible for the calls on /x after it came into force only.
    expect(report.coverage).toEqual({ 'model-429': { eligible: 1, selected: 1, triggered: 1 }, 'every-x': { eligible: 1, selected: 1, triggered: 1 } })
    expect(validateReport(report).calls.map((c) => c.fault)).toEqual(['model-429', null, 'every-x', null, null])
  })

  it.each([
    ['a call naming a rule of another set', (r: any) => (r.calls[2].fault = 'model-429'), '$.calls[2].fault: expected the name of a rule in earlierRules[1], the rules calls 3 to 4 began under, got "model-429"'],
    ['rule sets that leave a gap', (r: any) => (r.earlierRules[1].from = 4), '$.earlierRules[1].from: expected 3 (the rule sets cover the calls in order)'],
    ['coverage of a rule no set has', (r: any) => (r.coverage.other = { eligible: 0, selected: 0, triggered: 0 }), '$.coverage: expected one entry per rule name'],
    ['eligibility counted across every call', (r: any) => (r.coverage['every-x'].eligible = 3), '$.coverage["every-x"]: coverage disagrees with the recorded calls (recomputed 1/1/1)'],
  ])('rejects %s', (_name, mutate, message) => {
    const report = changedReport()
    mutate(report)
    expect(() => validateReport(report, 'incident.json')).toThrow(message)
  })
})
