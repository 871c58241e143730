/**
 * `toolstorm har export FILE OUT.har` and `toolstorm har import IN.har FILE`: HAR 1.2, as browsers'
 * devtools and Polly.JS write it. Imports are redacted on the way in.
 */
import type { Argv, CommandModule } from 'yargs'
import { Cassette } from '../../cassette/cassette.js'
import { exportHar } from '../../cassette/har-export.js'
import { importHar } from '../../cassette/har-import.js'
import { readInputDocument } from '../../io/read-input-file.js'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { printError } from '../output.js'
import { numberOption } from '../numeric-options.js'
import { MAX_BODY_LIMIT } from '../../engine/schema/cassette.js'
import { stormFromArgs } from './proxy.js'

/** HAR files hold every body inline: allow larger ones than reports. */
const MAX_HAR_BYTES = 256 * 1024 * 1024

interface HarArgs {
  action: 'export' | 'import'
  from: string
  to: string
  rules?: string
  'body-limit': number
}

export const harCommand: CommandModule<object, HarArgs> = {
  command: 'har <action> <from> <to>',
  describe: 'Convert a cassette to HAR 1.2 (export FILE OUT.har) or a HAR to a cassette (import IN.har FILE)',
  builder: (yargs: Argv) =>
    yargs
      .positional('action', { choices: ['export', 'import'] as const, demandOption: true })
      .positional('from', { type: 'string', demandOption: true, describe: 'The cassette (export) or the HAR file (import)' })
      .positional('to', { type: 'string', demandOption: true, describe: 'The HAR file (export) or the cassette (import) to write' })
      .option('rules', { type: 'string', describe: 'import: routes and redaction options (keys, secrets) from this rules file' })
      .option('body-limit', { ...numberOption('body-limit', { min: 0, max: MAX_BODY_LIMIT }), default: 1024 * 1024, describe: 'import: bytes stored per body' })
      .example('$0 har export incident.cassette.jsonl incident.har', 'open it in a browser\'s devtools')
      .example('$0 har import devtools.har incident.cassette.jsonl', 'then: toolstorm replay incident.cassette.jsonl') as unknown as Argv<HarArgs>,
  async handler(args) {
    if (args.action === 'export') {
      const cassette = await Cassette.load(args.from)
      await writeFileAtomic(args.to, JSON.stringify(exportHar(cassette), null, 2) + '\n')
      printError(`HAR written to ${args.to} (${cassette.exchanges.length} entries)`)
      return
    }
    const document = await readInputDocument(args.from, { maxBytes: MAX_HAR_BYTES, format: 'json' })
    const storm = await stormFromArgs({ rules: args.rules, clock: 'real' } as Parameters<typeof stormFromArgs>[0])
    const cassette = await importHar(document, { source: args.from, storm, bodyLimit: args['body-limit'] })
    await cassette.save(args.to)
    printError(`cassette written to ${args.to} (${cassette.exchanges.length} exchanges)`)
  },
}
