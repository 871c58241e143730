/**
 * `--junit FILE`: one JUnit testcase per variation, for any CI: named by route, fault and ordinal
 * (`classname` the route, `name` the fault and call), a `<failure>` naming the failing check and
 * the commands that reproduce it, `<skipped>` for a variation not exercised (its fault never
 * fired) or not run (a budget), and a known failure (`--baseline`, `--allow`) as skipped too, so
 * the report agrees with the exit code.
 */
import type { ExploreResult, ExploreVariationResult } from './explore-result.js'
import { describeOf, formatRecovery } from './format-matrix.js'

/** Text as XML character data or an attribute value: escaped, and characters XML 1.0 forbids dropped. */
export function xmlText(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
}

function caseName(variation: ExploreVariationResult): { classname: string; name: string } {
  const target = variation.steps[variation.steps.length - 1]!
  const before = variation.steps.slice(0, -1).map((step) => `${step.fault} on ${step.route} #${step.ordinal}`)
  return { classname: target.route, name: `${target.fault} #${target.ordinal}${before.length ? ` after ${before.join(', ')}` : ''} [${variation.id}]` }
}

function testcase(variation: ExploreVariationResult, command: string): string {
  const { classname, name } = caseName(variation)
  const open = `    <testcase classname="${xmlText(classname)}" name="${xmlText(name)}" time="${variation.seconds.toFixed(3)}"`
  const cost = formatRecovery(variation.recovery)
  const out = cost ? `\n      <system-out>${xmlText(cost)}</system-out>` : ''
  if (variation.status === 'not-exercised') return `${open}>\n      <skipped message="not exercised: the fault never fired"/>${out}\n    </testcase>`
  if (variation.status === 'pass') return `${open}>${out}\n    </testcase>`
  const message = variation.failed.map((failure) => `${failure.check}: ${failure.detail}`).join('; ')
  if (variation.known) return `${open}>\n      <skipped message="${xmlText(`known failure (${variation.known === 'baseline' ? 'in --baseline' : 'allowed'}): ${message}`)}"/>${out}\n    </testcase>`
  const body = [
    describeOf(variation),
    ...variation.failed.map((failure) => `${failure.check}: ${failure.detail}`),
    '',
    `rerun: toolstorm explore --only ${variation.id} -- ${command}`,
    ...(variation.counterexample ? [`counterexample: ${variation.counterexample}`] : []),
    ...(variation.output ? ['', '--- the last lines the command printed ---', variation.output] : []),
  ].join('\n')
  return `${open}>\n      <failure message="${xmlText(message)}" type="${xmlText(variation.failed[0]?.check ?? 'failure')}">${xmlText(body)}</failure>${out}\n    </testcase>`
}

/** The JUnit XML document of a result. */
export function formatJunit(result: ExploreResult): string {
  const budget = result.skipped.filter((skip) => skip.ids?.length && (skip.reason === 'max-runs' || skip.reason === 'time-budget' || skip.reason === 'stopped'))
  const notRun = budget.flatMap((skip) => (skip.ids ?? []).map((id, index) => `    <testcase classname="not run" name="${xmlText(`${skip.names?.[index] ?? id} [${id}]`)}" time="0">\n      <skipped message="${xmlText(skip.detail)}"/>\n    </testcase>`))
  const cases = [...result.variations.map((variation) => testcase(variation, result.command)), ...notRun]
  const failures = result.variations.filter((variation) => variation.status === 'fail' && !variation.known).length
  const skipped = result.variations.filter((variation) => variation.status === 'not-exercised' || (variation.status === 'fail' && variation.known)).length + notRun.length
  const counts = `tests="${cases.length}" failures="${failures}" errors="0" skipped="${skipped}" time="${result.timing.seconds.toFixed(3)}"`
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="toolstorm explore" ${counts}>`,
    `  <testsuite name="${xmlText(`toolstorm explore: ${result.command}`)}" ${counts}>`,
    '    <properties>',
    `      <property name="seed" value="${result.seed}"/>`,
    `      <property name="depth" value="${result.depth}"/>`,
    `      <property name="toolstorm" value="${xmlText(result.toolstorm)}"/>`,
    '    </properties>',
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n')
}
