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
import { reportCommand } from './commands/report.js'
import { rulesCommand } from './commands/rules.js'
import { scenariosCommand } from './commands/scenarios.js'
import { schemaCommand } from './commands/schema.js'
import { ConfigError, PortInUseError } from '../errors.js'
import { explainUsage, type ParsingState } from './explain-usage.js'
import { reportError } from './output.js'

export async function main(argv: string[] = hideBin(process.argv)): Promise<number> {
  const cli = yargs(argv)
  try {
    await cli
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
      .command(reportCommand)
      .command(rulesCommand)
      .command(schemaCommand)
      .demandCommand(1, 'Choose a command.')
      .strict()
      .recommendCommands()
      .version(VERSION)
      .help()
      // Throwing stops yargs before the command's handler: a fail callback that returns lets it run
      // the handler anyway (a proxy served traffic on a mistyped flag, and the error came at shutdown).
      .fail((message: string | null, error: Error | undefined) => {
        // Errors other than yargs' own (a coerce that refused a value) come from the handler.
        if (error && error.name !== 'YError') throw error
        const usage = explainUsage(message ?? error?.message ?? 'Invalid command line.', argv, cli as unknown as ParsingState)
        throw new ConfigError(`${usage} Run "toolstorm --help" for usage.`, { code: 'ERR_USAGE' })
      })
      .parseAsync()
  } catch (error) {
    // Every command that listens takes its ports as --port and --admin-port.
    if (error instanceof PortInUseError) return reportError(error.withOption(error.server === 'admin' ? '--admin-port' : '--port'))
    return reportError(error)
  }
  return typeof process.exitCode === 'number' ? process.exitCode : 0
}
