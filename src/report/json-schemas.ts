/** JSON Schemas generated from the zod schemas, for editors (`"$schema"` in a rules file). */
import { z } from 'zod'
import { cassetteLineSchema } from '../cassette/format/segment-lines.js'
import { configSchema, reportSchema } from '../default-faults.js'
import { exploreResultSchema } from '../explore/explore-result.js'

export const JSON_SCHEMA_NAMES = ['rules', 'report', 'cassette', 'explore'] as const
export type JsonSchemaName = (typeof JSON_SCHEMA_NAMES)[number]

const SCHEMAS = {
  rules: { schema: configSchema, io: 'input', title: 'toolstorm rules file' },
  report: { schema: reportSchema, io: 'output', title: 'toolstorm report' },
  // A cassette is JSON Lines: each line is the header, one exchange, or (version 4) a segment, settings, effects, claims or end line.
  cassette: { schema: cassetteLineSchema, io: 'output', title: 'toolstorm cassette line (JSON Lines: a header, then one exchange per line, and version 4\'s segment, settings, effects, claims and end lines)' },
  explore: { schema: exploreResultSchema, io: 'output', title: 'toolstorm explore result (--json)' },
} as const

export function jsonSchemaFor(name: JsonSchemaName): Record<string, unknown> {
  const { schema, io, title } = SCHEMAS[name]
  // The cassette's lines repeat the settings (rules) in the header, segment and settings lines: defined once.
  const generated = z.toJSONSchema(schema, { io, unrepresentable: 'any', ...(name === 'cassette' ? { reused: 'ref' as const } : {}) }) as Record<string, unknown>
  return { ...generated, $id: `https://toolstorm.dev/schemas/${name}.schema.json`, title }
}
