/**
 * `toolstorm har export FILE OUT.har` and `toolstorm har import IN.har FILE`: HAR 1.2, as browsers'
 * devtools and Polly.JS write it. Imports are redacted on the way in.
 */
import type { Argv, CommandModule } from 'yargs'
import { Cassette } from '../../cassette/format/cassette.js'
import { cutBodiesOf, describeCutBodies } from '../../cassette/format/cut-bodies.js'
import { exportHar } from '../../cassette/har/har-export.js'
import { importHar } from '../../cassette/har/har-import.js'
import { readInputDocument } from '../../io/read-input-file.js'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { printError } from '../output.js'
import { numberOption } from '../numeric-options.js'
import { DEFAULT_BODY_LIMIT, MAX_BODY_LIMIT } from '../../cassette/format/cassette-schema.js'
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
      .option('body-limit', { ...numberOption('body-limit', { min: 0, max: MAX_BODY_LIMIT }), default: DEFAULT_BODY_LIMIT, describe: 'import: bytes stored per body (default 16 MiB)' })
      .example('$0 har export incident.cassette.jsonl incident.har', 'open it in a browser\'s devtools')
      .example('$0 har import devtools.har incident.cassette.jsonl', 'then: toolstorm replay incident.cassette.jsonl') as unknown as Argv<HarArgs>,
  async handler(args) {
    if (args.action === 'export') {
      const cassette = await Cassette.load(args.from)
      await writeFileAtomic(args.to, JSON.stringify(exportHar(cassette), null, 2) + '\n')
      printError(`HAR written to ${args.to} (${cassette.exchanges.length} entries)`)
      const cut = cutBodiesOf(cassette.exchanges).count
      if (cut) printError(`${cut === 1 ? '1 body was' : `${cut} bodies were`} cut at the body limit when recorded: the HAR holds the stored prefix, with a comment saying so and the recorded size.`)
      return
    }
    const document = await readInputDocument(args.from, { maxBytes: MAX_HAR_BYTES, format: 'json', what: 'the HAR file' })
    const storm = await stormFromArgs({ rules: args.rules, clock: 'real' } as Parameters<typeof stormFromArgs>[0])
    const cassette = await importHar(document, { source: args.from, storm, bodyLimit: args['body-limit'] })
    await cassette.save(args.to)
    printError(`cassette written to ${args.to} (${cassette.exchanges.length} exchanges)`)
    // A HAR body can also be incomplete in the HAR itself (left out, or shorter than its size).
    const cut = describeCutBodies(cutBodiesOf(cassette.exchanges), args['body-limit'], { action: 'import', cause: 'incomplete in the HAR or cut at the body limit' })
    if (cut) printError(cut)
  },
}
