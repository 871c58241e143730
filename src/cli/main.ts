/**
 * The `toolstorm` command line: a thin shell. Each command parses its arguments and files, calls
 * the library and prints. The error code decides the exit code (0 ok, 1 failed contract,
 * 2 bad input).
 */
import yargs from 'yargs'
import { hideBin } from 'yargs/helpers'
import { VERSION } from '../version.js'
import { caCommand } from './commands/ca.js'
import { checkCommand } from './commands/check.js'
import { demoCommand } from './commands/demo.js'
import { inspectCommand } from './commands/inspect.js'
import { labCommand } from './commands/lab.js'
import { proxyCommand } from './commands/proxy.js'
import { harCommand } from './commands/har.js'
import { recordCommand } from './commands/record.js'
import { replayCommand } from './commands/replay.js'
import { rulesCommand } from './commands/rules.js'
import { scenariosCommand } from './commands/scenarios.js'
import { schemaCommand } from './commands/schema.js'
import { printError, reportError } from './output.js'

export async function main(argv: string[] = hideBin(process.argv)): Promise<number> {
  let usageError: string | null = null
  try {
    await yargs(argv)
      .scriptName('toolstorm')
      .usage('$0 <command> [options]\n\nBreak the HTTP calls of AI agents. Verify recovery.')
      .command(demoCommand)
      .command(proxyCommand)
      .command(caCommand)
      .command(recordCommand)
      .command(replayCommand)
      .command(harCommand)
      .command(labCommand)
      .command(scenariosCommand)
      .command(inspectCommand)
      .command(checkCommand)
      .command(rulesCommand)
      .command(schemaCommand)
      .demandCommand(1, 'Choose a command.')
      .strict()
      .version(VERSION)
      .help()
      .fail((message, error) => {
        if (error) throw error
        usageError = message
      })
      .parseAsync()
  } catch (error) {
    return reportError(error)
  }
  if (usageError !== null) {
    printError(`${usageError} Run "toolstorm --help" for usage.`)
    return 2
  }
  return typeof process.exitCode === 'number' ? process.exitCode : 0
}
