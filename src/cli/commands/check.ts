import type { Argv, CommandModule } from 'yargs'
import { ConfigError } from '../../errors.js'
import { contract } from '../../engine/contracts/contract.js'
import { readReportsOrCassette } from '../../cassette/read-reports-or-cassette.js'
import { formatCheck } from '../../demo/format-demo.js'
import { printLine } from '../output.js'

interface CheckArgs {
  file: string
  'max-calls': number
  json: boolean
}

export const checkCommand: CommandModule<object, CheckArgs> = {
  command: 'check <file>',
  describe: 'Run the contracts on a saved report or cassette: every rule triggered, no duplicate effects, a call budget',
  builder: (yargs: Argv) =>
    yargs
      .positional('file', { type: 'string', demandOption: true, describe: 'Report, demo run or comparison (JSON), or a cassette (JSON Lines)' })
      .option('max-calls', { type: 'number', default: 100, describe: 'Fail when more calls were made (refusals included)' })
      .option('json', { type: 'boolean', default: false, describe: 'Print the contract as JSON' }) as unknown as Argv<CheckArgs>,
  async handler(args) {
    const maxCalls = args['max-calls']
    if (!Number.isInteger(maxCalls) || maxCalls < 0) throw new ConfigError(`Failed to check ${args.file}: --max-calls must be a nonnegative integer, got ${maxCalls}.`, { code: 'ERR_USAGE' })
    const { reports } = await readReportsOrCassette(args.file)
    // The contract is rebuilt from the trace, never taken from a verdict stored in the file.
    const results = reports.map((report) => contract(report).requireTriggered().noDuplicateEffects().atMostCalls(maxCalls).toJSON())
    if (args.json) printLine(JSON.stringify(results.length === 1 ? results[0] : { runs: results }, null, 2))
    else
      for (const result of results) {
        printLine(result.passed ? 'PASS' : 'FAIL')
        for (const check of result.checks) printLine(formatCheck(check, ''))
      }
    if (results.some((result) => !result.passed)) process.exitCode = 1
  },
}
