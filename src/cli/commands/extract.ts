/**
 * `toolstorm extract FILE --run ID [--route R] [--since T] --out SMALL`: cut runs out of a stopped
 * cassette (or a rotated recording's index) into a small cassette of their own, renumbered and
 * valid, body files included: a fixture for one run out of a day of recording.
 */
import { existsSync } from 'node:fs'
import type { Argv, CommandModule } from 'yargs'
import { extractRuns } from '../../cassette/format/extract.js'
import { CassetteError } from '../../errors.js'
import { secondsOption } from '../numeric-options.js'
import { printError } from '../output.js'

interface ExtractArgs {
  file: string
  run: string[]
  route: string[]
  since?: number
  out: string
  overwrite: boolean
}

export const extractCommand: CommandModule<object, ExtractArgs> = {
  command: 'extract <file>',
  describe: 'Cut runs out of a stopped cassette (or a rotated recording\'s index) into a small cassette of their own',
  builder: (yargs: Argv) =>
    yargs
      .positional('file', { type: 'string', demandOption: true, describe: 'Cassette (JSON Lines), or the index of a rotated recording (NAME.index.jsonl)' })
      .option('run', { type: 'string', array: true, demandOption: true, describe: 'A run to keep (repeatable)' })
      .option('route', { type: 'string', array: true, default: [] as string[], describe: 'Keep only calls on routes matching this glob, as in rules (repeatable)' })
      .option('since', { ...secondsOption('since', { min: 0, max: 365 * 86_400 }), describe: 'Keep only exchanges that started this long into their run or later (90, 90s, 5m)' })
      .option('out', { type: 'string', demandOption: true, describe: 'The cassette to write' })
      .option('overwrite', { type: 'boolean', default: false, describe: 'Replace --out if it exists' })
      .example('$0 extract staging.jsonl --run ci-1234 --out ci-1234.jsonl', 'one run of a long recording, as a fixture')
      .example('$0 extract staging.index.jsonl --run ci-1234 --route "POST /ship" --out ship.jsonl', 'a run of a rotated recording, only its shipments') as unknown as Argv<ExtractArgs>,
  async handler(args) {
    if (existsSync(args.out) && !args.overwrite) throw new CassetteError('ERR_CASSETTE_EXISTS', `Failed to extract into ${args.out}: it exists. Nothing was written. Choose another --out, or pass --overwrite to replace it.`)
    const cassette = await extractRuns(args.file, { runs: args.run.map(String), routes: args.route.map(String), ...(args.since !== undefined ? { since: args.since } : {}) })
    await cassette.save(args.out)
    printError(`extracted ${cassette.exchanges.length} exchanges of run ${args.run.join(', ')} into ${args.out}`)
  },
}
