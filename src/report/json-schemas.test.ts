import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { JSON_SCHEMA_NAMES, jsonSchemaFor } from './json-schemas.js'

describe('published JSON Schemas', () => {
  it.each(JSON_SCHEMA_NAMES)('schemas/%s.schema.json matches the zod schema (run "npm run schemas" to refresh)', (name) => {
    const committed = JSON.parse(readFileSync(new URL(`../../schemas/${name}.schema.json`, import.meta.url), 'utf8'))
    expect(committed).toEqual(jsonSchemaFor(name))
  })

  it('lists every fault kind in the rules schema', () => {
    const text = JSON.stringify(jsonSchemaFor('rules'))
    for (const kind of ['timeout', 'rate_limit', 'unavailable', 'replace', 'latency', 'response_lost', 'schema_drift', 'reset', 'stream_cut', 'stream_stall', 'drop_terminal', 'slow_stream', 'truncate']) expect(text).toContain(`"${kind}"`)
  })
})
