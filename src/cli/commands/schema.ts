import type { Argv, CommandModule } from 'yargs'
import { JSON_SCHEMA_NAMES, jsonSchemaFor, type JsonSchemaName } from '../../report/json-schemas.js'
import { printLine } from '../output.js'

interface SchemaArgs {
  name: JsonSchemaName
}

export const schemaCommand: CommandModule<object, SchemaArgs> = {
  command: 'schema <name>',
  describe: 'Print the JSON Schema of a file format (rules, report, cassette, explore)',
  builder: (yargs: Argv) => yargs.positional('name', { choices: JSON_SCHEMA_NAMES, demandOption: true }) as unknown as Argv<SchemaArgs>,
  handler(args) {
    printLine(JSON.stringify(jsonSchemaFor(args.name), null, 2))
  },
}
