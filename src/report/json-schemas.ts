/** JSON Schemas generated from the zod schemas, for editors (`"$schema"` in a rules file). */
import { z } from 'zod'
import { cassetteLineSchema } from '../cassette/format/cassette-schema.js'
import { configSchema, reportSchema } from '../default-faults.js'
import { exploreResultSchema } from '../explore/explore-result.js'

export const JSON_SCHEMA_NAMES = ['rules', 'report', 'cassette', 'explore'] as const
export type JsonSchemaName = (typeof JSON_SCHEMA_NAMES)[number]

const SCHEMAS = {
  rules: { schema: configSchema, io: 'input', title: 'toolstorm rules file' },
  report: { schema: reportSchema, io: 'output', title: 'toolstorm report' },
  // A cassette is JSON Lines: each line is the header or one exchange.
  cassette: { schema: cassetteLineSchema, io: 'output', title: 'toolstorm cassette line (JSON Lines: a header, then one exchange per line)' },
  explore: { schema: exploreResultSchema, io: 'output', title: 'toolstorm explore result (--json)' },
} as const

export function jsonSchemaFor(name: JsonSchemaName): Record<string, unknown> {
  const { schema, io, title } = SCHEMAS[name]
  const generated = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>
  return { ...generated, $id: `https://toolstorm.dev/schemas/${name}.schema.json`, title }
}
