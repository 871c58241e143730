import type { Argv, CommandModule } from 'yargs'
import { stormPlugins } from '../../create-storm.js'
import { faultFor } from '../../default-faults.js'
import { loadConfigFile } from '../../io/load-config-file.js'
import { formatRuleWarning, lintRules, ruleNotes } from '../../lint/lint-rules.js'
import { printError, printLine } from '../output.js'

interface RulesArgs {
  file: string
  json: boolean
  strict: boolean
}

export const rulesCommand: CommandModule<object, RulesArgs> = {
  command: 'rules <file>',
  describe: 'Validate a rules file (JSON or YAML), explain each rule, and warn about rules that can never fire',
  builder: (yargs: Argv) =>
    yargs
      .positional('file', { type: 'string', demandOption: true, describe: 'Rules file' })
      .option('json', { type: 'boolean', default: false, describe: 'Print the parsed config (defaults applied) as JSON' })
      .option('strict', { type: 'boolean', default: false, describe: 'Exit 1 when a rule can never fire (warnings are printed either way)' }) as unknown as Argv<RulesArgs>,
  async handler(args) {
    const config = await loadConfigFile(args.file)
    // The plug-ins a storm made of this file is served with (the default ones).
    const warnings = lintRules(config, stormPlugins())
    // Warnings go to stderr, so that --json output stays the config alone.
    for (const warning of warnings) printError(`warning: ${formatRuleWarning(warning)}`)
    // Notes are not warnings: --strict does not fail on them.
    for (const note of ruleNotes(config)) printError(`note: ${formatRuleWarning(note)}`)
    if (warnings.length && args.strict) process.exitCode = 1
    if (args.json) {
      printLine(JSON.stringify(config, null, 2))
      return
    }
    const never = new Set(warnings.map((warning) => warning.rule))
    const verdict = warnings.length ? `Rules v${config.version} with ${warnings.length} warning(s)` : `Valid rules v${config.version}`
    printLine(`${verdict}: ${config.rules.length} rule(s), seed ${config.seed}, ${Object.keys(config.routes).length} named route(s)`)
    for (const [name, spec] of Object.entries(config.routes)) printLine(`  route ${name} = ${spec}`)
    for (const rule of config.rules) {
      const fault = faultFor(rule.kind)
      const calls = rule.calls.length ? `calls ${rule.calls.join(', ')}` : 'every call'
      const extras = [rule.probability < 1 ? `p=${rule.probability}` : null, rule.limit !== null ? `limit ${rule.limit}` : null].filter(Boolean).join(', ')
      printLine(`  ${rule.name}: on ${rule.route} (${calls}${extras ? `, ${extras}` : ''}), ${fault.phase}: ${fault.explain(rule as never)}${never.has(rule.name) ? ' (can never fire)' : ''}`)
    }
  },
}
