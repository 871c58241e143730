/**
 * `--html FILE`: one self-contained page (no script, no request: styles inline) with the matrix
 * (call sites × faults) and, per failure, the timeline of its calls and effects, the checks that
 * failed, the command's last lines and the commands that reproduce it. Everything shown comes
 * from the result, which holds only redacted evidence.
 */
import { stoppedVariations, type ExploreResult, type ExploreVariationResult } from './explore-result.js'
import { describeOf, formatRecovery } from './format-matrix.js'

function html(text: string | number): string {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')
}

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem;color:#1b1f24;background:#fff}
h1{font-size:1.3rem;margin:0 0 .3rem}h2{font-size:1.1rem;margin:2rem 0 .5rem}h3{font-size:1rem;margin:1.5rem 0 .3rem}
code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}pre{background:#f6f8fa;padding:.6rem;overflow:auto;max-height:20rem}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa;font-weight:600}td.pass{background:#dafbe1}td.fail{background:#ffebe9;font-weight:600}td.ne{background:#fff8c5}td.none{color:#8c959f}
.summary{color:#57606a}.known{color:#57606a;font-weight:400}
`

function cellClass(variation: ExploreVariationResult | undefined): string {
  if (!variation) return 'none'
  return variation.status === 'pass' ? 'pass' : variation.status === 'fail' ? 'fail' : 'ne'
}

function cellText(variation: ExploreVariationResult | undefined): string {
  if (!variation) return '–'
  if (variation.status === 'pass') return 'PASS'
  if (variation.status === 'not-exercised') return 'not exercised'
  return `FAIL${variation.known ? ` <span class="known">(${variation.known === 'baseline' ? 'known' : 'allowed'})</span>` : ''}`
}

/** The matrix of single faults (and faults on fallback paths): a row per call site, a column per fault. */
function matrix(result: ExploreResult): string {
  const singles = result.variations.filter((variation) => variation.origin !== 'pair')
  const rowKey = (variation: ExploreVariationResult) => {
    const target = variation.steps[variation.steps.length - 1]!
    return `${target.route} #${target.ordinal}`
  }
  const rows = [...new Set(singles.map(rowKey))]
  const faults = [...new Set(singles.map((variation) => variation.steps[variation.steps.length - 1]!.fault))]
  const head = `<tr><th>call site</th>${faults.map((fault) => `<th>${html(fault)}</th>`).join('')}</tr>`
  const body = rows.map((row) => {
    const site = result.sites.find((candidate) => `${candidate.route} #${candidate.ordinal}` === row)
    const under = site && site.found !== 'baseline' ? `<br><small>reached under ${html(site.found)}</small>` : ''
    const cells = faults.map((fault) => {
      const variation = singles.find((candidate) => rowKey(candidate) === row && candidate.steps[candidate.steps.length - 1]!.fault === fault)
      const title = variation ? `${describeOf(variation)}${variation.failed.length ? ': ' + variation.failed.map((failure) => `${failure.check}: ${failure.detail}`).join('; ') : ''}${variation.recovery ? ` (${formatRecovery(variation.recovery)})` : ''}` : 'not applicable'
      const link = variation?.status === 'fail' ? `<a href="#v-${html(variation.id)}">${cellText(variation)}</a>` : cellText(variation)
      return `<td class="${cellClass(variation)}" title="${html(title)}">${link}</td>`
    })
    return `<tr><th>${html(row)}${under}</th>${cells.join('')}</tr>`
  })
  return `<table>${head}${body.join('')}</table>`
}

function pairs(result: ExploreResult): string {
  const list = result.variations.filter((variation) => variation.origin === 'pair')
  if (list.length === 0) return ''
  const rows = list.map((variation) => `<tr><td class="${cellClass(variation)}">${cellText(variation)}</td><td>${html(describeOf(variation))}</td><td><code>${html(variation.id)}</code></td></tr>`)
  return `<h2>Pairs of faults</h2><table><tr><th>verdict</th><th>faults</th><th>id</th></tr>${rows.join('')}</table>`
}

function failure(variation: ExploreVariationResult, command: string): string {
  const timeline = (variation.timeline ?? []).map(
    (call) =>
      `<tr><td>${call.call}</td><td>${call.started.toFixed(3)} s</td><td>${html(call.route)} #${call.ordinal}</td><td>${html(call.outcome)}${call.status === null ? '' : ` ${call.status}`}</td><td>${call.fault ? `<strong>${html(call.fault)}</strong>` : ''}</td><td>${call.effects.map((effect) => `${html(effect.name)} ${html(effect.key)} <small>(identity ${effect.identity})</small>`).join('<br>')}</td></tr>`,
  )
  return [
    `<h3 id="v-${html(variation.id)}">${html(describeOf(variation))} <code>${html(variation.id)}</code></h3>`,
    `<ul>${variation.failed.map((check) => `<li><strong>${html(check.check)}</strong>: ${html(check.detail)}</li>`).join('')}</ul>`,
    variation.recovery ? `<p class="summary">${html(formatRecovery(variation.recovery))}</p>` : '',
    `<table><tr><th>call</th><th>at</th><th>call site</th><th>outcome</th><th>fault</th><th>effects</th></tr>${timeline.join('')}</table>`,
    variation.output ? `<details><summary>the last lines the command printed</summary><pre>${html(variation.output)}</pre></details>` : '',
    `<pre>toolstorm explore --only ${html(variation.id)} -- ${html(command)}${variation.counterexample ? `\ntoolstorm replay ${html(variation.counterexample)}/cassette.jsonl -- ${html(command)}` : ''}</pre>`,
  ].join('\n')
}

/** The page. */
export function formatHtml(result: ExploreResult): string {
  const { summary } = result
  const failures = result.variations.filter((variation) => variation.status === 'fail')
  const skipped = result.skipped.map((skip) => `<tr><td>${html(skip.reason)}</td><td>${html(skip.what)}</td><td>${html(skip.detail)}</td><td>${skip.variations}</td></tr>`)
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>toolstorm explore: ${html(result.command)}</title><style>${STYLE}</style></head>
<body>
<h1>toolstorm explore: <code>${html(result.command)}</code></h1>
<p class="summary">${summary.variations} variations: ${summary.passed} pass, <strong>${summary.failed} fail</strong>${summary.failed !== summary.newFailures ? ` (${summary.failed - summary.newFailures} known)` : ''}, ${summary.notExercised} not exercised, ${summary.skipped} skipped · seed ${result.seed} · depth ${result.depth} · baseline ${result.baseline.calls} calls, ${result.baseline.effects} effects · ${result.timing.seconds.toFixed(1)} s · toolstorm ${html(result.toolstorm)} · <strong>${stoppedVariations(result) > 0 ? 'STOPPED' : result.exitCode === 0 ? 'PASS' : 'FAIL'}</strong></p>
<h2>Matrix</h2>
${matrix(result)}
${pairs(result)}
${failures.length ? `<h2>Failures</h2>\n${failures.map((variation) => failure(variation, result.command)).join('\n')}` : ''}
${skipped.length ? `<h2>Not run</h2><table><tr><th>why</th><th>what</th><th>detail</th><th>variations</th></tr>${skipped.join('')}</table>` : ''}
</body></html>
`
}
