import { z } from 'zod'
import { defineFault } from './fault.js'
import type { HeaderMap } from '../http.js'
import type { BaseRule } from '../schema/rule-base.js'
import { drawValue } from '../decision.js'
import { drift, driftAgainstSchema, type Json } from '../../json/json-drift.js'

export interface SchemaDriftRule extends BaseRule {
  readonly fields?: readonly string[] | undefined
}

/**
 * Forward, then change the types of fields in the real JSON response: a string becomes a number
 * or null, a number a string, an object a list, and so on. Which fields drift, and into what, is a
 * pure function of the seed, rule, route, key and field path, so a run replays identically.
 * `fields` (dotted paths such as `warehouse` or `items.price`) restricts the candidates; by
 * default every object member is one. A body that is not a JSON object or array is relayed
 * unchanged and does not count as triggered. A plug-in that knows the request says where its
 * payload is (`editAnswer`): on an MCP request, only the answer's `result.structuredContent`
 * drifts (and `fields` are paths within it); an answer without one is relayed unchanged. A tool
 * that declared an `outputSchema` drifts into values that schema forbids.
 */
export const schemaDriftFault = defineFault<'schema_drift', SchemaDriftRule>({
  type: 'schema_drift',
  phase: 'on-response',
  needsBody: true,
  params: {
    fields: z.array(z.string().min(1).max(200)).min(1).max(100).optional(),
  },
  explain: (rule) => (rule.fields ? `change the types of ${rule.fields.join(', ')} in the JSON response` : 'change the types of fields in the JSON response'),
  async apply({ rule, seed, route, key, request, response, protocol }) {
    if (!response) return { action: { type: 'pass' }, injected: false }
    const bytes = await response.readBody()
    const drawFor = (path: string) => drawValue(seed, rule.name, route, `${key}|${path}`)
    const schema = request.outputSchema ?? null
    const driftPayload = (target: object) => ((schema && driftAgainstSchema(target as Json, schema, drawFor, rule.fields)) || drift(target as Json, drawFor, rule.fields)) > 0
    const edited = protocol.editAnswer?.(request, bytes, driftPayload)
    const body = edited !== undefined ? edited : driftJson(bytes, drawFor, rule.fields)
    if (body === null) return { action: { type: 'pass' }, injected: false }
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(response.headers as HeaderMap)) {
      if (value === undefined || DROPPED_HEADERS.has(name.toLowerCase())) continue
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value
    }
    return { action: { type: 'respond', status: response.status, headers, body }, injected: true }
  },
})

/** A JSON body with drifted fields, or null when it is not a JSON object or array. */
function driftJson(bytes: Uint8Array, drawFor: (path: string) => bigint, fields: readonly string[] | undefined): Uint8Array | null {
  let parsed: Json
  try {
    parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as Json
  } catch {
    return null
  }
  if (parsed === null || typeof parsed !== 'object') return null
  return drift(parsed, drawFor, fields) > 0 ? new TextEncoder().encode(JSON.stringify(parsed)) : null
}

const DROPPED_HEADERS = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'etag', 'content-md5', 'digest'])
