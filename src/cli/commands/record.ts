/**
 * `toolstorm record FILE [proxy options] [-- <command>]`: run the proxy, record every exchange
 * into FILE, and (with a command) run it with the proxy's URLs in its environment, then exit
 * with its exit code. Without a command it records until SIGINT/SIGTERM.
 */
import type { Argv, CommandModule } from 'yargs'
import { proxyOptions, runProxy, type ProxyArgs } from './proxy.js'
import { stateOptions, type StateArgs } from '../state-args.js'
import { recordOptions, type RecordArgs } from './record-options.js'

export interface RecordCommandArgs extends ProxyArgs, RecordArgs, Partial<StateArgs> {
  file: string
  '--'?: Array<string | number>
}

/** The command after `--`, as strings. */
export function commandAfterDashes(args: { '--'?: Array<string | number> }): string[] {
  return (args['--'] ?? []).map(String)
}

export const recordCommand: CommandModule<object, RecordCommandArgs> = {
  command: 'record <file>',
  describe: 'Record the traffic of a command (after --) or of any client into a cassette',
  builder: (yargs: Argv) =>
    stateOptions(recordOptions(proxyOptions(yargs.parserConfiguration({ 'populate--': true, 'parse-positional-numbers': false }).positional('file', { type: 'string', demandOption: true, describe: 'Cassette to write (JSON Lines)' })))
      .example('$0 record incident.cassette.jsonl --target https://api.example.com -- node agent.js', 'the agent calls $TOOLSTORM_PROXY_URL; its exit code is kept')
      .example('$0 record incident.cassette.jsonl -- python agent.py', 'forward mode: HTTP_PROXY is set for the command')
      .example('$0 record run.cassette.jsonl --state redis://redis:6379 --target http://tools:4000 -- node agent.js', 'one replica of several: the cassette holds every replica\'s exchanges of the runs it served')) as unknown as Argv<RecordCommandArgs>,
  async handler(args) {
    process.exitCode = await runProxy(args, { name: 'record', file: args.file, command: commandAfterDashes(args) })
  },
}
