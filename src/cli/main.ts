/**
 * The `toolstorm` command line: a thin shell. Each command parses its arguments and files, calls
 * the library and prints. The error code decides the exit code (0 ok, 1 failed contract,
 * 2 bad input).
 */
import yargs, { type Argv, type CommandModule } from 'yargs'
import { hideBin } from 'yargs/helpers'
import { VERSION } from '../version.js'
import { ConfigError, PortInUseError } from '../errors.js'
import { explainUsage, type ParsingState } from './explain-usage.js'
import { dropOutputWhenPipeCloses, reportError } from './output.js'

/**
 * Each command's module, in the order `--help` lists them. Only the command named on the command
 * line is loaded: the modules of all of them cost about twice the CPU of one, and a proxy's start
 * is what a test suite waits for (docs/benchmarks.md#python-fixture). Anything else (no command, a
 * typo, `--help`) loads them all.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const COMMAND_MODULES: Record<string, () => Promise<CommandModule<any, any>>> = {
  demo: async () => (await import('./commands/demo.js')).demoCommand,
  explore: async () => (await import('./commands/explore.js')).exploreCommand,
  proxy: async () => (await import('./commands/proxy.js')).proxyCommand,
  ca: async () => (await import('./commands/ca.js')).caCommand,
  record: async () => (await import('./commands/record.js')).recordCommand,
  replay: async () => (await import('./commands/replay.js')).replayCommand,
  mcp: async () => (await import('./commands/mcp.js')).mcpCommand,
  har: async () => (await import('./commands/har.js')).harCommand,
  lab: async () => (await import('./commands/lab.js')).labCommand,
  scenarios: async () => (await import('./commands/scenarios.js')).scenariosCommand,
  inspect: async () => (await import('./commands/inspect.js')).inspectCommand,
  extract: async () => (await import('./commands/extract.js')).extractCommand,
  check: async () => (await import('./commands/check.js')).checkCommand,
  report: async () => (await import('./commands/report.js')).reportCommand,
  rules: async () => (await import('./commands/rules.js')).rulesCommand,
  schema: async () => (await import('./commands/schema.js')).schemaCommand,
}

/** The modules of the commands named (default: every command, in `--help` order). */
export function loadCommands(names: readonly string[] = Object.keys(COMMAND_MODULES)): Promise<CommandModule<object, never>[]> {
  return Promise.all(names.map((name) => (COMMAND_MODULES[name] as () => Promise<CommandModule<object, never>>)()))
}

/**
 * The parser of `argv` with `commands`: the command line is checked (commands, flags, choices,
 * numeric values) before a handler runs, and a bad one throws `ERR_USAGE`. The docs test parses
 * every `toolstorm` command line in the docs with handlers that do nothing.
 */
export function cliParser(argv: readonly string[], commands: readonly CommandModule<object, never>[]): Argv {
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
  dropOutputWhenPipeCloses()
  const named = argv[0] !== undefined && Object.hasOwn(COMMAND_MODULES, argv[0]) ? [argv[0]] : undefined
  const commands = await loadCommands(named)
  try {
    await withoutHelpCache(cliParser(argv, commands)).parseAsync()
  } catch (error) {
    // Every command that listens takes its ports as --port and --admin-port.
    if (error instanceof PortInUseError) return reportError(error.withOption(error.server === 'admin' ? '--admin-port' : '--port'))
    return reportError(error)
  }
  return typeof process.exitCode === 'number' ? process.exitCode : 0
}

/**
 * yargs renders the command's whole help text once its handler has started (so that a later
 * `showHelp()` can print it): 15-50 ms of wrapping and measuring text, on every command's start,
 * for a help text that is never shown (usage errors are explained by `explainUsage`, before the
 * handler). Skipped through yargs' internal usage instance; if a yargs version lacks it, nothing changes.
 */
function withoutHelpCache(cli: Argv): Argv {
  const internal = (cli as unknown as { getInternalMethods?: () => { getUsageInstance?: () => { cacheHelpMessage?: unknown } } }).getInternalMethods?.()
  const usage = internal?.getUsageInstance?.()
  if (usage && typeof usage.cacheHelpMessage === 'function') usage.cacheHelpMessage = () => undefined
  return cli
}
