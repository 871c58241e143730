import { describe, expect, it } from 'vitest'
import { ReportError } from '../errors.js'
import { createStorm } from './storm.js'
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
