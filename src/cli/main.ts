/**
 * The `toolstorm` command line: a thin shell. Each command parses its arguments and files, calls
 * the library and prints. The error code decides the exit code (0 ok, 1 failed contract,
 * 2 bad input).
 */
import yargs, { type Argv, type CommandModule } from 'yargs'
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

/** Every command, in the order `--help` lists them. */
export const COMMANDS: readonly CommandModule<object, never>[] = [demoCommand, proxyCommand, caCommand, recordCommand, replayCommand, harCommand, labCommand, scenariosCommand, inspectCommand, checkCommand, reportCommand, rulesCommand, schemaCommand] as unknown as CommandModule<object, never>[]

/**
 * The parser of `argv` with `commands`: the command line is checked (commands, flags, choices,
 * numeric values) before a handler runs, and a bad one throws `ERR_USAGE`. The docs test parses
 * every `toolstorm` command line in the docs with handlers that do nothing.
 */
export function cliParser(argv: readonly string[], commands: readonly CommandModule<object, never>[] = COMMANDS): Argv {
  const cli = yargs([...argv])
  for (const command of commands) cli.command(command)
  return cli
    .scriptName('toolstorm')
    .usage('$0 <command> [options]\n\nBreak the HTTP calls of AI agents. Verify recovery.')
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
      const usage = explainUsage(message ?? error?.message ?? 'Invalid command line.', [...argv], cli as unknown as ParsingState)
      throw new ConfigError(`${usage} Run "toolstorm --help" for usage.`, { code: 'ERR_USAGE' })
    })
}

export async function main(argv: string[] = hideBin(process.argv)): Promise<number> {
  try {
    await cliParser(argv).parseAsync()
  } catch (error) {
    // Every command that listens takes its ports as --port and --admin-port.
    if (error instanceof PortInUseError) return reportError(error.withOption(error.server === 'admin' ? '--admin-port' : '--port'))
    return reportError(error)
  }
  return typeof process.exitCode === 'number' ? process.exitCode : 0
}
