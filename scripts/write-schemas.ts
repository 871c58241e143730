/** Regenerate schemas/*.schema.json from the zod schemas. */
import { writeFileSync } from 'node:fs'
import { JSON_SCHEMA_NAMES, jsonSchemaFor } from '../src/report/json-schemas.js'

for (const name of JSON_SCHEMA_NAMES) writeFileSync(new URL(`../schemas/${name}.schema.json`, import.meta.url), JSON.stringify(jsonSchemaFor(name), null, 2) + '\n')
