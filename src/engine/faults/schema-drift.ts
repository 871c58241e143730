import { z } from 'zod'
import { defineFault, type HeaderMap } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'
import { drawValue } from '../decision.js'

export interface SchemaDriftRule extends BaseRule {
  readonly fields?: readonly string[] | undefined
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** At most this many fields are considered, so a huge response costs bounded work. */
const MAX_CANDIDATES = 256
const MAX_DEPTH = 8

/**
 * Forward, then change the types of fields in the real JSON response: a string becomes a number
 * or null, a number a string, an object a list, and so on. Which fields drift, and into what, is a
 * pure function of the seed, rule, route, key and field path, so a run replays identically.
 * `fields` (dotted paths such as `warehouse` or `items.price`) restricts the candidates; by
 * default every object member is one. A body that is not a JSON object or array is relayed
 * unchanged and does not count as triggered. On an MCP request, only the answer's
 * `result.structuredContent` drifts (and `fields` are paths within it); an answer without one
 * (or an event stream) is relayed unchanged.
 */
export const schemaDriftFault = defineFault<'schema_drift', SchemaDriftRule>({
  type: 'schema_drift',
  phase: 'on-response',
  needsBody: true,
  params: {
    fields: z.array(z.string().min(1).max(200)).min(1).max(100).optional(),
  },
  explain: (rule) => (rule.fields ? `change the types of ${rule.fields.join(', ')} in the JSON response` : 'change the types of fields in the JSON response'),
  async apply({ rule, seed, route, key, request, response }) {
    if (!response) return { action: { type: 'pass' }, injected: false }
    const bytes = await response.readBody()
    let parsed: Json
    try {
      parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as Json
    } catch {
      return { action: { type: 'pass' }, injected: false }
    }
    if (parsed === null || typeof parsed !== 'object') return { action: { type: 'pass' }, injected: false }
    // An MCP answer drifts inside its result's structuredContent only (fields are paths within
    // it): drifting `id` or `jsonrpc` would break the protocol, not the tool's output.
    const target = request.mcp ? structuredContentOf(parsed) : parsed
    if (target === null) return { action: { type: 'pass' }, injected: false }
    const changed = drift(target, (path) => drawValue(seed, rule.name, route, `${key}|${path}`), rule.fields)
    if (changed === 0) return { action: { type: 'pass' }, injected: false }
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(response.headers as HeaderMap)) {
      if (value === undefined || DROPPED_HEADERS.has(name.toLowerCase())) continue
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value
    }
    return { action: { type: 'respond', status: response.status, headers, body: new TextEncoder().encode(JSON.stringify(parsed)) }, injected: true }
  },
})

/** The `result.structuredContent` object of a JSON-RPC answer, or null when it has none. */
function structuredContentOf(message: Json): Json | null {
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return null
  const result = message.result
  if (result === null || typeof result !== 'object' || Array.isArray(result)) return null
  const structured = result.structuredContent
  return structured !== null && typeof structured === 'object' ? structured : null
}

const DROPPED_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'etag', 'content-md5', 'digest'])

interface Candidate {
  readonly path: string
  readonly parent: Record<string, Json>
  readonly key: string
}

/** Mutate `root` in place; returns how many fields changed type. Exported for unit tests. */
export function drift(root: Json, drawFor: (path: string) => bigint, fields?: readonly string[]): number {
  const candidates: Candidate[] = []
  collect(root, '', 0, candidates)
  const wanted = fields ? new Set(fields) : null
  const eligible = wanted ? candidates.filter((c) => wanted.has(c.path)) : candidates
  if (eligible.length === 0) return 0
  const draws = eligible.map((c) => drawFor(c.path))
  // About half the candidates drift; at least one always does.
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
    const before = candidate.parent[candidate.key] as Json
    candidate.parent[candidate.key] = changeType(before, draws[i] as bigint)
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

/** A value of a different JSON type, picked by the draw's high bits. */
export function changeType(value: Json, draw: bigint): Json {
  const pick = <T>(options: T[]): T => options[Number((draw >> 8n) % BigInt(options.length))] as T
  if (value === null) return pick<Json>(['null', 0, false])
  switch (typeof value) {
    case 'string': {
      const numeric = value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value.length
      return pick<Json>([numeric, null, value.length > 0, [value]])
    }
    case 'number':
      return pick<Json>([String(value), null, value !== 0, { value }])
    case 'boolean':
      return pick<Json>([String(value), value ? 1 : 0, null])
    default:
      return Array.isArray(value) ? pick<Json>([JSON.stringify(value), null, { items: value }]) : pick<Json>([JSON.stringify(value), null, [value]])
  }
}
