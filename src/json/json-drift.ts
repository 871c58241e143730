/**
 * Type drift over a parsed JSON value, the mechanics of the `schema_drift` fault: fields change
 * into values of another JSON type (a string into a number or null, a number into a string, an
 * object into a list…), or, against a JSON Schema, into values it forbids. Which fields change, and
 * into what, is decided by `drawFor(path)`, so the caller makes it deterministic. A leaf library:
 * no toolstorm concept, no import.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
/** A JSON Schema, as a tool's `outputSchema` declares it. */
type JsonSchema = Record<string, unknown>

/** At most this many fields are considered, so a huge value costs bounded work. */
const MAX_CANDIDATES = 256
const MAX_DEPTH = 8

interface Candidate {
  readonly path: string
  readonly parent: Record<string, Json>
  readonly key: string
  /** The field's declared schema, when drifting against one. */
  readonly schema?: JsonSchema
}

/** Mutate `root` in place; returns how many fields changed type. */
export function drift(root: Json, drawFor: (path: string) => bigint, fields?: readonly string[]): number {
  const candidates: Candidate[] = []
  collect(root, '', 0, candidates)
  return driftCandidates(candidates, drawFor, fields, changeType)
}

/**
 * Mutate the fields of `root` that `schema` declares (its `properties`, nested objects and array
 * `items` included) into values of a type the field's schema does not allow; returns how many
 * changed (0 when the schema declares none of the fields present).
 */
export function driftAgainstSchema(root: Json, schema: JsonSchema, drawFor: (path: string) => bigint, fields?: readonly string[]): number {
  const candidates: Candidate[] = []
  collectDeclared(root, schema, '', 0, candidates)
  return driftCandidates(candidates, drawFor, fields, (before, draw, field) => {
    const options = typeChanges(before).filter((option) => field === undefined || !allows(field, option))
    return options.length === 0 ? undefined : (options[Number((draw >> 8n) % BigInt(options.length))] as Json)
  })
}

/** Drift about half the candidates (at least one), or every one `fields` names. */
function driftCandidates(candidates: Candidate[], drawFor: (path: string) => bigint, fields: readonly string[] | undefined, change: (before: Json, draw: bigint, schema?: JsonSchema) => Json | undefined): number {
  const wanted = fields ? new Set(fields) : null
  const eligible = wanted ? candidates.filter((c) => wanted.has(c.path)) : candidates
  if (eligible.length === 0) return 0
  const draws = eligible.map((c) => drawFor(c.path))
  let chosen = eligible.map((_, i) => ((draws[i] as bigint) & 1n) === 1n)
  if (wanted) chosen = eligible.map(() => true)
  if (!chosen.some(Boolean)) {
    let min = 0
    draws.forEach((d, i) => {
      if (d < (draws[min] as bigint)) min = i
    })
    chosen[min] = true
  }
  let changed = 0
  const mutatedPrefixes: string[] = []
  eligible.forEach((candidate, i) => {
    if (!chosen[i]) return
    if (mutatedPrefixes.some((prefix) => candidate.path.startsWith(prefix + '.'))) return
    const after = change(candidate.parent[candidate.key] as Json, draws[i] as bigint, candidate.schema)
    if (after === undefined) return
    candidate.parent[candidate.key] = after
    mutatedPrefixes.push(candidate.path)
    changed++
  })
  return changed
}

function collect(value: Json, path: string, depth: number, out: Candidate[]): void {
  if (depth >= MAX_DEPTH || out.length >= MAX_CANDIDATES || value === null || typeof value !== 'object') return
  if (Array.isArray(value)) {
    // Elements share their parent's field path, so `items.price` names the field in every item.
    for (const item of value.slice(0, 16)) collect(item, path, depth + 1, out)
    return
  }
  for (const name of Object.keys(value).sort()) {
    if (out.length >= MAX_CANDIDATES) return
    const childPath = path ? `${path}.${name}` : name
    out.push({ path: childPath, parent: value, key: name })
    collect(value[name] as Json, childPath, depth + 1, out)
  }
}

function schemaAt(schema: JsonSchema, member: 'properties' | 'items', name?: string): JsonSchema | null {
  const inner = schema[member]
  if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return null
  if (name === undefined) return inner as JsonSchema
  const field = Object.hasOwn(inner, name) ? (inner as Record<string, unknown>)[name] : undefined
  return field !== null && typeof field === 'object' && !Array.isArray(field) ? (field as JsonSchema) : null
}

/** Like `collect`, over the fields present in `value` that `schema` declares. */
function collectDeclared(value: Json, schema: JsonSchema, path: string, depth: number, out: Candidate[]): void {
  if (depth >= MAX_DEPTH || out.length >= MAX_CANDIDATES || value === null || typeof value !== 'object') return
  if (Array.isArray(value)) {
    const items = schemaAt(schema, 'items')
    if (items) for (const item of value.slice(0, 16)) collectDeclared(item, items, path, depth + 1, out)
    return
  }
  for (const name of Object.keys(value).sort()) {
    if (out.length >= MAX_CANDIDATES) return
    const field = schemaAt(schema, 'properties', name)
    if (!field) continue
    const childPath = path ? `${path}.${name}` : name
    out.push({ path: childPath, parent: value, key: name, schema: field })
    collectDeclared(value[name] as Json, field, childPath, depth + 1, out)
  }
}

function jsonType(value: Json): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

/**
 * Whether `schema` lets `value` through, judged on what a type change can break: `type`,
 * `enum`, `const`, and `anyOf`/`oneOf`/`allOf` of those. Anything else (`$ref`, formats,
 * bounds) counts as allowing, so such a field is only drifted where a type surely breaks it.
 */
function allows(schema: JsonSchema, value: Json): boolean {
  if (Array.isArray(schema.enum) && !schema.enum.some((option) => JSON.stringify(option) === JSON.stringify(value))) return false
  if ('const' in schema && JSON.stringify(schema.const) !== JSON.stringify(value)) return false
  const declared = typeof schema.type === 'string' ? [schema.type] : Array.isArray(schema.type) ? (schema.type as unknown[]) : null
  if (declared) {
    const type = jsonType(value)
    if (!declared.includes(type) && !(type === 'integer' && declared.includes('number'))) return false
  }
  const branches = (key: string) => (Array.isArray(schema[key]) ? (schema[key] as unknown[]).filter((branch): branch is JsonSchema => branch !== null && typeof branch === 'object') : null)
  const anyOf = branches('anyOf') ?? branches('oneOf')
  if (anyOf && anyOf.length > 0 && !anyOf.some((branch) => allows(branch, value))) return false
  const allOf = branches('allOf')
  if (allOf && !allOf.every((branch) => allows(branch, value))) return false
  return true
}

/** The values of other JSON types a field may drift into (a number can also lose its integrality). */
function typeChanges(value: Json): Json[] {
  if (value === null) return ['null', 0, false]
  switch (typeof value) {
    case 'string': {
      const numeric = value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value.length
      return [numeric, null, value.length > 0, [value]]
    }
    case 'number':
      return [String(value), null, value !== 0, { value }, ...(Number.isInteger(value) ? [value + 0.5] : [])]
    case 'boolean':
      return [String(value), value ? 1 : 0, null]
    default:
      return Array.isArray(value) ? [JSON.stringify(value), null, { items: value }] : [JSON.stringify(value), null, [value]]
  }
}

/** A value of a different JSON type, picked by the draw's high bits. */
export function changeType(value: Json, draw: bigint): Json {
  // Without a schema an integer stays a number: x.5 would not break a `number` field.
  const options = typeof value === 'number' ? typeChanges(value).slice(0, 4) : typeChanges(value)
  return options[Number((draw >> 8n) % BigInt(options.length))] as Json
}
