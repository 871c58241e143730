import type { Argv, CommandModule } from 'yargs'
import { looksLikeCassette, readReportsOrCassette } from '../../cassette/format/read-reports-or-cassette.js'
import { formatCassetteSummary } from '../../cassette/format/summarize-cassette.js'
import { formatDuplicateEffects } from '../../engine/contracts/duplicate-effects.js'
import { summarizeReport } from '../../report/summarize-report.js'
import { printError, printLine } from '../output.js'
import { formatRunLine, runLine, runLinesOfCassette } from '../../report/run-lines.js'
import { Cassette } from '../../cassette/format/cassette.js'
import { ConfigError } from '../../errors.js'
import { unlistedCalls } from '../../engine/contracts/check.js'

interface InspectArgs {
  file: string
  json: boolean
  runs: boolean
  failed: boolean
}

export const inspectCommand: CommandModule<object, InspectArgs> = {
  command: 'inspect <file>',
  describe: 'Validate a report, demo result, comparison or cassette and summarise it',
  builder: (yargs: Argv) =>
    yargs
      .positional('file', { type: 'string', demandOption: true, describe: 'Report, demo run or comparison (JSON), or a cassette (JSON Lines)' })
      .option('json', { type: 'boolean', default: false, describe: 'Print the summary as JSON' })
      .option('runs', { type: 'boolean', default: false, describe: 'One line per run: calls, statuses, faults, effects, duplicates, and a verdict (FAIL when something went wrong in it)' })
      .option('failed', { type: 'boolean', default: false, describe: 'With --runs: only the runs that went wrong' }) as unknown as Argv<InspectArgs>,
  async handler(args) {
    if (args.failed && !args.runs) throw new ConfigError('Failed to inspect: --failed filters the lines of --runs; give --runs too.', { code: 'ERR_USAGE' })
    if (args.runs) {
      // A cassette's lines come straight from its exchanges (no report per run): 100,000 exchanges within the load gate.
      const loaded = (await looksLikeCassette(args.file)) ? await Cassette.load(args.file) : null
      const read = loaded ? null : await readReportsOrCassette(args.file)
      const omitted = read?.omitted ?? null
      if (omitted) printError(`warning: ${omitted.runs} runs are not in ${args.file} (${omitted.reason})`)
      const lines = loaded ? runLinesOfCassette(loaded) : (read?.reports ?? []).map(runLine)
      const shown = args.failed ? lines.filter((line) => line.verdict === 'failed') : lines
      const failed = lines.filter((line) => line.verdict === 'failed').length
      if (args.json) printLine(JSON.stringify({ runs: shown, total: lines.length, failed, ...(omitted ? { omitted } : {}) }, null, 2))
      else {
        for (const line of shown) printLine(formatRunLine(line))
        printLine(`${lines.length} runs: ${failed} failed, ${lines.length - failed} ok`)
      }
      return
    }
    const { reports, cassette, omitted } = await readReportsOrCassette(args.file)
    if (omitted) printError(`warning: ${omitted.runs} runs are not in ${args.file} (${omitted.reason})`)
    const summaries = reports.map(summarizeReport)
    if (args.json) {
      const summary = { ...(summaries.length === 1 ? summaries[0] : { runs: summaries }), ...(omitted ? { omitted } : {}) }
      printLine(JSON.stringify(cassette ? { cassette, ...summary } : summary, null, 2))
      return
    }
    if (cassette) for (const line of formatCassetteSummary(cassette)) printLine(line)
    for (const summary of summaries) {
      printLine(`Valid report v1 (run ${summary.run}): ${summary.calls} calls, ${summary.effects} effects`)
      if (summary.droppedCalls) printLine(`  ${unlistedCalls(summary)}: the counts below cover the ${summary.calls - summary.droppedCalls} listed`)
      if (summary.refusedEffects) printLine(`  effect reports refused: ${summary.refusedEffects.count}, so its effects may be incomplete (first: ${summary.refusedEffects.first})`)
      const routes = Object.entries(summary.routes).map(([route, count]) => `${route} ${count}`)
      if (routes.length) printLine(`  calls per route: ${routes.join(', ')}`)
      for (const [name, c] of Object.entries(summary.coverage)) printLine(`  rule ${name}: eligible ${c.eligible}, selected ${c.selected}, triggered ${c.triggered}`)
      const faults = Object.entries(summary.faults).map(([kind, count]) => `${kind} ${count}`)
      printLine(`  faults injected: ${faults.length ? faults.join(', ') : 'none'}`)
      if (summary.budgetRejections) printLine(`  refused by the call budget: ${summary.budgetRejections}`)
      if (summary.duplicateEffects) {
        printLine(`  duplicate effects: ${summary.duplicateEffects}`)
        for (const line of formatDuplicateEffects(summary.duplicates)) printLine(`    ${line}`)
      }
      const model = summary.modelCalls
      if (model.calls) {
        const models = Object.entries(model.models).map(([name, count]) => `${name} ${count}`)
        printLine(`  model calls: ${model.calls} (${model.streamed} streamed): ${models.join(', ')}`)
        printLine(`  tokens: ${model.inputTokens} input, ${model.outputTokens} output${model.withoutUsage ? ` (${model.withoutUsage} call(s) without usage)` : ''}`)
      }
      if (summary.cutStreams) printLine(`  streams cut: ${summary.cutStreams}`)
      for (const r of summary.recovery ?? []) {
        const cost = `${r.calls} call(s), ${r.modelCalls} model call(s), ${r.inputTokens} input + ${r.outputTokens} output tokens${r.unmeasured ? ` (${r.unmeasured} without usage)` : ''}`
        printLine(`  recovery from call ${r.call} (${r.rule ?? 'no rule'} on ${r.route}): ${r.recovered ? `recovered in ${r.seconds}s` : 'not recovered'}, ${cost}`)
      }
      if (summary.claims) {
        const verdicts = Object.entries(summary.claims.verdicts).map(([verdict, count]) => `${verdict} ${count}`)
        printLine(`  claims: ${summary.claims.total} (${verdicts.join(', ')})`)
        for (const claim of summary.claims.contradicted.slice(0, 10)) printLine(`    #${claim.id} ${claim.tool} ${claim.status}: ${claim.verdict} (calls ${claim.calls.join(', ') || 'none'})`)
      }
    }
  },
}
