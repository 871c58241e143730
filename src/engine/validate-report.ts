/**
 * Load-time validation of a report: its schema, then its internal consistency. Coverage is
 * recomputed from the calls, so a hand-edited "triggered: 1" cannot pass `check`.
 * This checks consistency, not authenticity: a self-consistent file can still be forged.
 */
import { ReportError } from '../errors.js'
import { faultFor } from './faults/registry.js'
import { callPathName, isEligible } from './rules/select.js'
import { formatIssues } from './schema/format-issues.js'
import { reportSchema, type Report } from './schema/report.js'

/** Parse and check a report; `source` names the file in errors. */
export function validateReport(input: unknown, source = 'report', at = '$'): Report {
  const parsed = reportSchema.safeParse(input)
  if (!parsed.success) {
    const lines = formatIssues(parsed.error, input).map((line) => (at === '$' ? line : line.replace(/^\$/, at)))
    throw new ReportError(`Failed to read the report in ${source}: ${lines[0]}.`, { details: lines.join('\n') })
  }
  const report = parsed.data
  const fail = (path: string, reason: string): never => {
    throw new ReportError(`Failed to read the report in ${source}: ${at}${path}: ${reason}.`)
  }

  const rules = new Map(report.rules.map((rule) => [rule.name, rule]))
  if (rules.size !== report.rules.length) fail('.rules', 'expected unique rule names')
  const coverageNames = Object.keys(report.coverage)
  if (coverageNames.length !== rules.size || coverageNames.some((name) => !rules.has(name))) fail('.coverage', 'expected one entry per rule name')

  const recomputed = new Map([...rules.keys()].map((name) => [name, { eligible: 0, selected: 0, triggered: 0 }]))
  const ordinals = new Map<string, number>()
  report.calls.forEach((call, index) => {
    const path = `.calls[${index}]`
    if (call.id !== index + 1) fail(`${path}.id`, `expected ${index + 1} (ids are contiguous)`)
    const ordinal = (ordinals.get(call.route) ?? 0) + 1
    if (call.ordinal !== ordinal) fail(`${path}.ordinal`, `expected ${ordinal} (the running count for route "${call.route}")`)
    ordinals.set(call.route, ordinal)
    if (call.parent !== null && call.parent >= call.id) fail(`${path}.parent`, 'expected an earlier call')
    const callPath = callPathName(call, report.routes)
    for (const rule of report.rules) if (isEligible(rule, call.route, call.ordinal, callPath)) (recomputed.get(rule.name) as { eligible: number }).eligible++
    if (call.cut && !call.injected) fail(`${path}.cut`, 'a cut stream needs an injected stream fault')
    if (call.fault === null) {
      if (call.kind !== null || call.injected) fail(path, 'a fault kind or injection needs a rule reference')
      return
    }
    const rule = rules.get(call.fault)
    if (!rule) return fail(`${path}.fault`, `expected the name of a rule, got "${call.fault}"`)
    if (rule.probability === 0) fail(`${path}.fault`, 'a probability-zero rule cannot be selected')
    if (call.kind !== rule.kind || !isEligible(rule, call.route, call.ordinal, callPath)) fail(`${path}.kind`, 'expected the kind of an eligible rule')
    const counts = recomputed.get(rule.name) as { selected: number; triggered: number }
    counts.selected++
    if (call.injected) counts.triggered++
    if (rule.limit !== null && counts.selected > rule.limit) fail(path, `rule "${rule.name}" was selected more often than its limit ${rule.limit}`)
    const phase = faultFor(rule.kind).phase
    if (call.phase !== phase) fail(`${path}.phase`, `expected "${phase}"`)
    if (call.injected && phase === 'before-upstream' && rule.kind !== 'latency' && call.executed) fail(path, 'a fault injected before the upstream cannot have reached it')
    if (call.injected && phase !== 'before-upstream' && !call.executed) fail(path, 'a fault after the upstream answered requires that it was reached')
  })

  const seen = new Map<number, string>()
  report.effects.forEach((effect, index) => {
    const path = `.effects[${index}]`
    const call = report.calls[effect.call - 1]
    if (!call && effect.call > report.calls.length + report.droppedCalls) return fail(`${path}.call`, 'expected the id of a recorded call')
    if (call && !call.executed) fail(`${path}.call`, 'a call that never reached the upstream cannot commit an effect')
    const label = JSON.stringify([effect.name, effect.key])
    const known = seen.get(effect.identity)
    if (known === undefined) {
      if (effect.identity !== seen.size + 1) fail(`${path}.identity`, `expected ${seen.size + 1} (identities are contiguous in first-seen order)`)
      seen.set(effect.identity, label)
    } else if (known !== label && !effect.redacted) {
      fail(`${path}.identity`, 'an identity cannot change its label')
    }
  })

  // Calls beyond the itemized limit are counted, not listed: coverage can only be bounded then.
  if (report.droppedCalls > 0) {
    for (const [name, counts] of Object.entries(report.coverage)) {
      const floor = recomputed.get(name) as { eligible: number; selected: number; triggered: number }
      if (counts.triggered > counts.selected || counts.selected > counts.eligible || counts.eligible < floor.eligible || counts.selected < floor.selected || counts.triggered < floor.triggered) {
        fail(`.coverage[${JSON.stringify(name)}]`, 'coverage is inconsistent with the recorded calls')
      }
    }
    return report
  }
  for (const [name, counts] of recomputed) {
    const declared = report.coverage[name] as { eligible: number; selected: number; triggered: number }
    if (declared.eligible !== counts.eligible || declared.selected !== counts.selected || declared.triggered !== counts.triggered) {
      fail(`.coverage[${JSON.stringify(name)}]`, `coverage disagrees with the recorded calls (recomputed ${counts.eligible}/${counts.selected}/${counts.triggered})`)
    }
  }
  return report
}
