/**
 * Load-time validation of a report: its schema, then its internal consistency. Coverage is
 * recomputed from the calls, so a hand-edited "triggered: 1" cannot pass `check`.
 * This checks consistency, not authenticity: a self-consistent file can still be forged.
 */
import { ReportError } from '../errors.js'
import { faultFor, reportSchema } from '../default-faults.js'
import { callPathName, isEligible } from '../engine/rules/select.js'
import { formatIssues } from '../engine/schema/format-issues.js'
import type { Report } from '../engine/schema/report.js'
import type { Rule } from '../engine/schema/rule.js'

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

  // The rule sets calls began under, in call order: earlier ones (rules changed mid-run), then the rules in force.
  const sets = ruleSets(report, fail)
  const names = new Set(sets.flatMap((set) => [...set.rules.keys()]))
  const coverageNames = Object.keys(report.coverage)
  // Past the itemized calls, a rule set may have gone unlisted: its rules are counted, not named.
  const namesMatch = report.droppedCalls > 0 ? [...names].every((name) => name in report.coverage) : coverageNames.length === names.size && coverageNames.every((name) => names.has(name))
  if (!namesMatch) fail('.coverage', 'expected one entry per rule name')

  const recomputed = new Map([...names].map((name) => [name, { eligible: 0, selected: 0, triggered: 0 }]))
  const ordinals = new Map<string, number>()
  let set = 0
  report.calls.forEach((call, index) => {
    const path = `.calls[${index}]`
    while (call.id > (sets[set] as RuleSet).to) set++
    const { rules, at: under } = sets[set] as RuleSet
    if (call.id !== index + 1) fail(`${path}.id`, `expected ${index + 1} (ids are contiguous)`)
    const ordinal = (ordinals.get(call.route) ?? 0) + 1
    if (call.ordinal !== ordinal) fail(`${path}.ordinal`, `expected ${ordinal} (the running count for route "${call.route}")`)
    ordinals.set(call.route, ordinal)
    if (call.parent !== null && call.parent >= call.id) fail(`${path}.parent`, 'expected an earlier call')
    const callPath = callPathName(call, report.routes)
    for (const rule of rules.values()) if (isEligible(rule, call.route, call.ordinal, callPath)) (recomputed.get(rule.name) as { eligible: number }).eligible++
    if (call.cut && !call.injected) fail(`${path}.cut`, 'a cut stream needs an injected stream fault')
    if (call.fault === null) {
      if (call.kind !== null || call.injected) fail(path, 'a fault kind or injection needs a rule reference')
      return
    }
    const rule = rules.get(call.fault)
    if (!rule) return fail(`${path}.fault`, `expected the name of a rule${under}, got "${call.fault}"`)
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
      const floor = recomputed.get(name) ?? { eligible: 0, selected: 0, triggered: 0 }
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

interface RuleSet {
  readonly rules: ReadonlyMap<string, Rule>
  /** The last call that began under it. */
  readonly to: number
  /** Where it is in the report, for messages (empty when the rules never changed). */
  readonly at: string
}

/** `earlierRules` (each for its range of calls, contiguous from call 1), then `rules` for every later call. */
function ruleSets(report: Report, fail: (path: string, reason: string) => never): RuleSet[] {
  const sets: RuleSet[] = []
  let next = 1
  ;(report.earlierRules ?? []).forEach((earlier, index) => {
    const path = `.earlierRules[${index}]`
    if (earlier.from !== next) fail(`${path}.from`, `expected ${next} (the rule sets cover the calls in order)`)
    if (earlier.to < earlier.from) fail(`${path}.to`, `expected ${earlier.from} or more`)
    sets.push({ rules: uniqueRules(earlier.rules, `${path}.rules`, fail), to: earlier.to, at: ` in ${path.slice(1)}, the rules calls ${earlier.from} to ${earlier.to} began under` })
    next = earlier.to + 1
  })
  sets.push({ rules: uniqueRules(report.rules, '.rules', fail), to: Number.POSITIVE_INFINITY, at: next > 1 ? ` in rules, the rules in force from call ${next}` : '' })
  return sets
}

function uniqueRules(rules: readonly Rule[], path: string, fail: (path: string, reason: string) => never): Map<string, Rule> {
  const byName = new Map(rules.map((rule) => [rule.name, rule]))
  if (byName.size !== rules.length) fail(path, 'expected unique rule names')
  return byName
}
