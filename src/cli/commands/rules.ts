import type { Argv, CommandModule } from 'yargs'
import { faultFor } from '../../engine/faults/registry.js'
import { loadConfigFile } from '../../io/load-config-file.js'
import { printLine } from '../output.js'

interface RulesArgs {
  file: string
  json: boolean
}

export const rulesCommand: CommandModule<object, RulesArgs> = {
  command: 'rules <file>',
  describe: 'Validate a rules file (JSON or YAML) and explain each rule',
  builder: (yargs: Argv) =>
    yargs
      .positional('file', { type: 'string', demandOption: true, describe: 'Rules file' })
      .option('json', { type: 'boolean', default: false, describe: 'Print the parsed config (defaults applied) as JSON' }) as unknown as Argv<RulesArgs>,
  async handler(args) {
    const config = await loadConfigFile(args.file)
    if (args.json) {
      printLine(JSON.stringify(config, null, 2))
      return
    }
    printLine(`Valid rules v${config.version}: ${config.rules.length} rule(s), seed ${config.seed}, ${Object.keys(config.routes).length} named route(s)`)
    for (const [name, spec] of Object.entries(config.routes)) printLine(`  route ${name} = ${spec}`)
    for (const rule of config.rules) {
      const fault = faultFor(rule.kind)
      const calls = rule.calls.length ? `calls ${rule.calls.join(', ')}` : 'every call'
      const extras = [rule.probability < 1 ? `p=${rule.probability}` : null, rule.limit !== null ? `limit ${rule.limit}` : null].filter(Boolean).join(', ')
      printLine(`  ${rule.name}: on ${rule.route} (${calls}${extras ? `, ${extras}` : ''}), ${fault.phase}: ${fault.explain(rule as never)}`)
    }
  },
}
