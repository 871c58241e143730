import type { Argv, CommandModule } from 'yargs'
import { AdminApiError, ConfigError } from '../../errors.js'
import { createStorm } from '../../engine/storm.js'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { printError } from '../output.js'
import { stateFromArgs, stateLocationOptions, type StateArgs } from '../state-args.js'
import { reportDocument } from './proxy.js'
import { cutBodiesOf, describeCutBodies } from '../../cassette/format/cut-bodies.js'
import { Cassette } from '../../cassette/format/cassette.js'
import { ITEMIZED_CALLS_LIMIT } from '../../engine/schema/config.js'
import type { RedisRunState } from '../../state/redis-run-state.js'
import { MAX_SHARED_CASSETTE_BYTES } from '../../state/state-options.js'

interface ReportArgs extends Omit<StateArgs, 'state-unavailable'> {
  run?: string
  out?: string
  cassette?: string
}

/** `toolstorm report --state URL --run ID`: the merged report of a run shared by proxy replicas. */
export const reportCommand: CommandModule<object, ReportArgs> = {
  command: 'report',
  describe: 'Print the merged report of a run that proxy replicas share through Redis (check and inspect read it)',
  builder: (yargs: Argv) =>
    stateLocationOptions(yargs)
      .option('run', { type: 'string', describe: 'The run (default: every run, as a report set)' })
      .option('out', { type: 'string', describe: 'Write the report to this file (atomically) instead of stdout' })
      .option('cassette', { type: 'string', describe: 'Instead of the report, write the cassette the replicas recorded (--record): every replica\'s exchanges in call order' })
      .conflicts('cassette', 'out')
      .example('$0 report --state redis://redis:6379 --run ci-1234 --cassette ci-1234.cassette.jsonl', 'the run as one cassette, assembled from every replica') as unknown as Argv<ReportArgs>,
  async handler(args) {
    const options = stateFromArgs(args, 'adopt')
    if (!options) throw new ConfigError('Failed to read the report: give the Redis the replicas share as --state redis://HOST:PORT[/DB].', { code: 'ERR_USAGE' })
    // The shared rules name the coverage's rules; nothing is published.
    const { connectRedisState } = await import('../../state/redis-run-state.js')
    const state = await connectRedisState(createStorm({}), { ...options, follow: false })
    try {
      const what = args.cassette !== undefined ? 'cassette' : 'report'
      if (args.run !== undefined && !(await state.hasRun(args.run))) {
        throw new AdminApiError('ERR_ADMIN_NOT_FOUND', `Failed to read the ${what}: no run "${args.run}" in ${state.shownUrl} under the prefix "${options.prefix}" (runs: ${(await state.runIds()).join(', ') || 'none'}).`)
      }
      if (args.cassette !== undefined) return await writeCassette(state, args.run, args.cassette)
      const document = args.run !== undefined ? await state.report(args.run) : await reportDocument(state)
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

/** The cassette of one run (or every run) as the replicas recorded it into Redis. */
async function writeCassette(state: RedisRunState, run: string | undefined, file: string): Promise<void> {
  const { header, exchanges, dropped } = await state.assembleCassette(run !== undefined ? [run] : null)
  if (header === null) {
    throw new AdminApiError('ERR_ADMIN_NOT_FOUND', `Failed to write the cassette: no replica recorded ${run !== undefined ? `run "${run}"` : 'any run'} in ${state.shownUrl}. Start the replicas with --record FILE (toolstorm proxy --state … --record FILE) to record into Redis.`)
  }
  const { version: _version, kind: _kind, exchanges: _count, ...input } = header
  const cassette = Cassette.from(input, exchanges, `the recording in ${state.shownUrl}`)
  await cassette.save(file)
  printError(`cassette written to ${file} (${exchanges.length} exchanges from every replica)`)
  const cut = describeCutBodies(cutBodiesOf(cassette.exchanges), cassette.header.bodyLimit)
  if (cut) printError(cut)
  if (dropped > 0) printError(`warning: ${dropped} exchanges were over the run's bound in Redis (${ITEMIZED_CALLS_LIMIT} exchanges, ${MAX_SHARED_CASSETTE_BYTES / 1024 ** 2} MiB) and are not in the cassette.`)
}
