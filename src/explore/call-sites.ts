/**
 * The call sites of one run, read off its cassette: a call site is a route and an ordinal (the
 * n-th call on that route in the run, Filibuster's "call site plus how many times it was
 * reached"), with what kind of call it was, which decides the faults that apply to it
 * (fault-catalogue.ts). Everything here is read from the recorded exchanges: method, the
 * response's content type and stream, the model-call and MCP evidence the plug-ins recorded.
 */
import type { CassetteExchange } from '../cassette/format/cassette-schema.js'
import type { DeltaKind, DeltaReader } from '../engine/streams/deltas.js'

/** What kind of call a call site is: the faults that apply to it follow from this. */
export interface CallKind {
  readonly method: string
  /** POST/PUT/PATCH/DELETE (an MCP `tools/call`); not a model call, nor an MCP message other than `tools/call`. */
  readonly write: boolean
  /** The answer was JSON: a JSON body, or an MCP tool result with `structuredContent`. */
  readonly json: boolean
  /** The answer was an event stream. */
  readonly stream: boolean
  /** The events of that stream, as the client received them (0: not a stream). */
  readonly events: number
  /** A model call: its API, whether it streamed, and which deltas its stream carried. */
  readonly model: { readonly api: string; readonly provider: string; readonly streamed: boolean; readonly deltas: readonly DeltaKind[] } | null
  /** An MCP message: its method, the tool it calls, and whether it travelled on a session. */
  readonly mcp: { readonly method: string; readonly tool: string | null; readonly id: boolean; readonly session: boolean } | null
}

export interface CallSite {
  readonly route: string
  readonly ordinal: number
  readonly kind: CallKind
}

/** `POST /shipments #1`: how a call site is named in messages and outputs. */
export function siteName(site: Pick<CallSite, 'route' | 'ordinal'>): string {
  return `${site.route} #${site.ordinal}`
}

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

function header(headers: Record<string, string | string[]> | undefined, name: string): string {
  for (const [key, value] of Object.entries(headers ?? {})) if (key.toLowerCase() === name) return Array.isArray(value) ? (value[0] ?? '') : value
  return ''
}

function bodyBytes(body: { encoding: 'utf8' | 'base64'; data: string } | null | undefined): Buffer {
  if (!body) return Buffer.alloc(0)
  return body.encoding === 'utf8' ? Buffer.from(body.data, 'utf8') : Buffer.from(body.data, 'base64')
}

/** The deltas a recorded model stream carried, read with the plug-ins' reader, event by event. */
function streamDeltas(exchange: CassetteExchange, readDeltas: readonly DeltaReader[]): DeltaKind[] {
  const response = exchange.upstream ?? exchange.response
  const events = exchange.response?.stream?.events
  if (!response || !events || readDeltas.length === 0) return []
  const bytes = bodyBytes(response.body)
  const found = new Set<DeltaKind>()
  let offset = 0
  for (const event of events) {
    const block = bytes.subarray(offset, offset + event.bytes)
    offset += event.bytes
    for (const read of readDeltas) {
      const kind = read(block)
      if (kind) found.add(kind)
    }
  }
  return [...found].sort()
}

/** The kind of call one recorded exchange was. */
export function callKindOf(exchange: CassetteExchange, readDeltas: readonly DeltaReader[] = []): CallKind {
  const method = exchange.request.method.toUpperCase()
  const answer = exchange.upstream ?? exchange.response
  const contentType = header(answer?.headers, 'content-type').toLowerCase()
  const stream = contentType.includes('text/event-stream') || exchange.response?.stream !== undefined
  const mcp = exchange.mcp ? { method: exchange.mcp.method, tool: exchange.mcp.tool, id: exchange.mcp.id !== null, session: exchange.mcp.session !== null } : null
  const model = exchange.model ? { api: exchange.model.api, provider: exchange.model.provider, streamed: exchange.model.streamed, deltas: exchange.model.streamed ? streamDeltas(exchange, readDeltas) : [] } : null
  // An MCP tool's JSON is its structuredContent (the only part schema_drift edits); anything else JSON by its content type.
  const json = mcp ? mcp.method === 'tools/call' && bodyBytes(answer?.body).includes('"structuredContent"') : !stream && /[/+]json\b/.test(contentType)
  const write = mcp ? mcp.method === 'tools/call' : model === null && WRITE_METHODS.has(method)
  const events = stream ? (exchange.response?.stream?.events.length ?? 0) : 0
  return { method, write, json, stream, events, model, mcp }
}

/**
 * The call sites of `run` among `exchanges`, in the order they were first reached: one per route
 * and ordinal. Refused calls (the call budget) have no ordinal and are no call site.
 */
export function callSitesOf(exchanges: readonly CassetteExchange[], run: string, readDeltas: readonly DeltaReader[] = []): CallSite[] {
  const sites: CallSite[] = []
  const seen = new Set<string>()
  for (const exchange of exchanges) {
    if (exchange.run !== run || exchange.ordinal === null) continue
    const key = `${exchange.route}\u0000${exchange.ordinal}`
    if (seen.has(key)) continue
    seen.add(key)
    sites.push({ route: exchange.route, ordinal: exchange.ordinal, kind: callKindOf(exchange, readDeltas) })
  }
  return sites
}

/** How many calls each route had (the highest ordinal reached), for "cannot fire" decisions. */
export function callsPerRoute(sites: readonly CallSite[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const site of sites) counts.set(site.route, Math.max(counts.get(site.route) ?? 0, site.ordinal))
  return counts
}

/** One short phrase for a call's kind: `write, JSON`, `model call, chat.completions, streamed`, `MCP tools/call get_weather`. */
export function describeKind(kind: CallKind): string {
  if (kind.model) return `model call, ${kind.model.api}${kind.model.streamed ? ', streamed' : ''}`
  if (kind.mcp) return `MCP ${kind.mcp.method}${kind.mcp.tool ? ` ${kind.mcp.tool}` : ''}${kind.mcp.session ? ', session' : ''}`
  return [kind.write ? 'write' : 'read', ...(kind.json ? ['JSON'] : []), ...(kind.stream ? [`stream of ${kind.events} event(s)`] : [])].join(', ')
}
