import type { Argv, CommandModule } from 'yargs'
import { AdminApiError, ConfigError } from '../../errors.js'
import { createStorm } from '../../engine/storm.js'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { printError } from '../output.js'
import { stateFromArgs, stateLocationOptions, type StateArgs } from '../state-args.js'
import { sharedReportDocument } from './proxy.js'

interface ReportArgs extends Omit<StateArgs, 'state-unavailable'> {
  run?: string
  out?: string
}

/** `toolstorm report --state URL --run ID`: the merged report of a run shared by proxy replicas. */
export const reportCommand: CommandModule<object, ReportArgs> = {
  command: 'report',
  describe: 'Print the merged report of a run that proxy replicas share through Redis (check and inspect read it)',
  builder: (yargs: Argv) =>
    stateLocationOptions(yargs)
      .option('run', { type: 'string', describe: 'The run (default: every run, as a report set)' })
      .option('out', { type: 'string', describe: 'Write the report to this file (atomically) instead of stdout' }) as unknown as Argv<ReportArgs>,
  async handler(args) {
    const options = stateFromArgs(args, 'adopt')
    if (!options) throw new ConfigError('Failed to read the report: give the Redis the replicas share as --state redis://HOST:PORT[/DB].', { code: 'ERR_USAGE' })
    // The shared rules name the coverage's rules; nothing is published.
    const { connectRedisState } = await import('../../engine/state/redis-run-state.js')
    const state = await connectRedisState(createStorm({}), { ...options, follow: false })
    try {
      let document: unknown
      if (args.run !== undefined) {
        if (!(await state.hasRun(args.run))) {
          throw new AdminApiError('ERR_ADMIN_NOT_FOUND', `Failed to read the report: no run "${args.run}" in ${state.shownUrl} under the prefix "${options.prefix}" (runs: ${(await state.runIds()).join(', ') || 'none'}).`)
        }
        document = await state.report(args.run)
      } else document = await sharedReportDocument(state)
      const text = JSON.stringify(document, null, 2) + '\n'
      if (args.out) {
        await writeFileAtomic(args.out, text)
        printError(`report written to ${args.out}`)
      } else process.stdout.write(text)
    } finally {
      await state.close()
    }
  },
}
