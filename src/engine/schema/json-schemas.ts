/** JSON Schemas generated from the zod schemas, for editors (`"$schema"` in a rules file). */
import { z } from 'zod'
import { configSchema } from './config.js'
import { reportSchema } from './report.js'

export const JSON_SCHEMA_NAMES = ['rules', 'report'] as const
export type JsonSchemaName = (typeof JSON_SCHEMA_NAMES)[number]

export function jsonSchemaFor(name: JsonSchemaName): Record<string, unknown> {
  const schema = name === 'rules' ? configSchema : reportSchema
  const generated = z.toJSONSchema(schema, { io: name === 'rules' ? 'input' : 'output', unrepresentable: 'any' }) as Record<string, unknown>
  return { ...generated, $id: `https://toolstorm.dev/schemas/${name}.schema.json`, title: name === 'rules' ? 'toolstorm rules file' : 'toolstorm report' }
}
