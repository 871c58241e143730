/**
 * HAR 1.2 to cassette, for HARs written by browsers' devtools (Chrome, Firefox), Polly.JS and
 * `har export`. Every entry becomes an exchange, in `startedDateTime` order; everything goes
 * through the redactor on the way in (a browser HAR carries cookies and tokens).
 *
 * Read from the standard fields: method, URL, headers (HTTP/2 pseudo-headers dropped), request
 * body (`postData.text`, or `params` as a form), status, headers, body (`content.text`, base64
 * when `encoding` says so), timings. A status of 0 is a failed request: `net::ERR_ABORTED` or a
 * timeout becomes a cancelled exchange, anything else a connection reset. A `_toolstorm` field
 * (written by `har export`) restores what HAR cannot say: route, ordinal, key, run, fault,
 * effects, the upstream's answer, truncation, a stream's event timing, model-call metadata.
 * A response body another tool left out of its HAR (`size` without `text`) is imported as cut at
 * its first byte: replay breaks it off and fails unless `--allow-truncated`.
 */
import { z } from 'zod'
import { CassetteError } from '../../errors.js'
import type { Redactor } from '../../redact/index.js'
import {
  DEFAULT_BODY_LIMIT,
  cassetteHeaderSchema,
  defaultMatchOptions,
  storedBodySchema,
  storedEffectSchema,
  storedFaultSchema,
  storedResponseSchema,
  storedStreamSchema,
  type CassetteExchange,
  type StoredBody,
  type StoredResponse,
} from '../format/cassette-schema.js'
import { formatIssues } from '../../engine/schema/format-issues.js'
import { cutSchema, mcpCallSchema, modelCallSchema } from '../../engine/schema/report.js'
import { callTraceSchema } from '../../engine/schema/claim-schema.js'
import { createStorm } from '../../create-storm.js'
import type { Storm } from '../../engine/storm.js'
import { captureBytes } from '../format/body-capture.js'
import { Cassette } from '../format/cassette.js'
import { storeBody } from '../format/store-body.js'
import { storeHeaders } from '../format/store-headers.js'

const nameValue = z.looseObject({ name: z.string(), value: z.string() })

const harToolstormSchema = z
  .looseObject({
    run: z.string().min(1),
    call: z.int().min(1).nullable(),
    route: z.string().min(1),
    ordinal: z.int().min(1).nullable(),
    key: z.string().min(1).nullable(),
    parent: z.int().min(1).nullable(),
    started: z.number().min(0),
    elapsed: z.number().min(0),
    url: z.string().min(1),
    bodyUnknown: z.literal(true).optional(),
    requestBody: storedBodySchema.omit({ data: true }).nullable(),
    responseBody: storedBodySchema.omit({ data: true }).nullable(),
    outcome: z.enum(['response', 'reset', 'error', 'cancelled']),
    upstream: storedResponseSchema.nullable(),
    executed: z.boolean(),
    fault: storedFaultSchema.nullable(),
    retryAfter: z.number().min(0).nullable(),
    error: z.string().nullable(),
    effects: z.array(storedEffectSchema),
    stream: storedStreamSchema.optional(),
    model: modelCallSchema.optional(),
    mcp: mcpCallSchema.optional(),
    cut: cutSchema.optional(),
    trace: callTraceSchema.optional(),
  })
  .optional()

const harEntrySchema = z.looseObject({
  startedDateTime: z.string().optional(),
  time: z.number().optional(),
  request: z.looseObject({
    method: z.string().min(1),
    url: z.string().min(1),
    headers: z.array(nameValue).default([]),
    postData: z.looseObject({ mimeType: z.string().optional(), text: z.string().optional(), params: z.array(z.looseObject({ name: z.string(), value: z.string().optional() })).optional(), _encoding: z.string().optional() }).optional(),
  }),
  response: z.looseObject({
    status: z.int().min(0).max(999),
    headers: z.array(nameValue).default([]),
    content: z.looseObject({ size: z.number().optional(), mimeType: z.string().optional(), text: z.string().optional(), encoding: z.string().optional() }).optional(),
    _error: z.string().nullable().optional(),
  }),
  _toolstorm: harToolstormSchema,
})

const harSchema = z.looseObject({
  log: z.looseObject({
    version: z.string().optional(),
    entries: z.array(harEntrySchema).max(1_000_000),
    _toolstorm: z.unknown().optional(),
  }),
})

export interface ImportHarOptions {
  /** Names the HAR in errors. */
  source?: string
  /** Routes, rules and redaction options (its redactor scrubs everything imported). Default: none. */
  storm?: Storm
  /** Bytes stored per body at most. Default 1 MiB. */
  bodyLimit?: number
}

type HarEntry = z.infer<typeof harEntrySchema>

function headerMap(list: ReadonlyArray<{ name: string; value: string }>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const { name, value } of list) {
    const lower = name.toLowerCase()
    if (lower.startsWith(':')) continue
    const previous = out[lower]
    out[lower] = previous === undefined ? value : [...(Array.isArray(previous) ? previous : [previous]), value]
  }
  return out
}

function first(headers: Record<string, string | string[]>, name: string): string | undefined {
  const value = headers[name]
  return Array.isArray(value) ? value[0] : value
}

async function importBody(bytes: Buffer | null, contentType: string | undefined, limit: number, redactor: Redactor, meta: Omit<StoredBody, 'data'> | null | undefined): Promise<StoredBody | null> {
  if (bytes === null || bytes.length === 0) return null
  const stored = await storeBody(captureBytes(bytes, limit), { contentType, contentEncoding: undefined, limit, redactor })
  if (stored === null) return null
  // `har export` wrote what the cassette knew about this body; keep it.
  return meta ? { ...stored, size: meta.size, truncated: meta.truncated || stored.truncated, ...(meta.decoded ? { decoded: meta.decoded } : {}) } : stored
}

/**
 * A body the HAR left out (devtools' "without content", Playwright's `content: 'omit'`): none when
 * `size` says there was none, else an empty prefix of a cut body. A body the HAR holds is taken as
 * whole: tools disagree on what `size` counts (encoded or decoded bytes), so it is not compared.
 */
function leftOut(size: number | undefined): StoredBody | null {
  if (size === undefined || !Number.isInteger(size) || size <= 0) return null
  return { encoding: 'utf8', data: '', size, truncated: true }
}

function redactStoredResponse(response: StoredResponse | null, redactor: Redactor): StoredResponse | null {
  if (response === null) return null
  const body = response.body
  const contentType = first(response.headers as Record<string, string | string[]>, 'content-type')
  return {
    status: response.status,
    headers: storeHeaders(response.headers, redactor),
    body: body && body.encoding === 'utf8' ? { ...body, data: redactor.body(body.data, contentType) } : body,
  }
}

async function exchangeOf(entry: HarEntry, seq: number, t0: number, storm: Storm, limit: number, counters: Map<string, number>): Promise<CassetteExchange> {
  const { redactor } = storm
  const extra = entry._toolstorm
  const request = entry.request
  const requestHeaders = headerMap(request.headers)
  const postData = request.postData
  let requestBytes: Buffer | null = null
  if (postData?.text !== undefined) requestBytes = Buffer.from(postData.text, postData._encoding === 'base64' ? 'base64' : 'utf8')
  else if (postData?.params?.length) requestBytes = Buffer.from(new URLSearchParams(postData.params.map((p): [string, string] => [p.name, p.value ?? ''])).toString())
  const requestType = postData?.mimeType || first(requestHeaders, 'content-type')

  const response = entry.response
  const responseHeaders = headerMap(response.headers)
  const error = response._error ?? ''
  const content = response.content
  const responseBytes = content?.text !== undefined ? Buffer.from(content.text, content.encoding === 'base64' ? 'base64' : 'utf8') : null
  let outcome: CassetteExchange['outcome'] = response.status === 0 ? (/ABORTED|TIMED_OUT/.test(error) ? 'cancelled' : 'reset') : /ABORTED/.test(error) ? 'cancelled' : 'response'
  if (extra) outcome = extra.outcome
  let stored: StoredResponse | null = null
  if (response.status >= 100 && response.status <= 599 && outcome !== 'reset') {
    let body = await importBody(responseBytes, content?.mimeType || first(responseHeaders, 'content-type'), limit, redactor, extra?.responseBody)
    // Another tool's HAR: a body it left out (its `size` says it had bytes) is incomplete, never passed off as whole.
    if (!extra && responseBytes === null) body = leftOut(content?.size)
    // HAR bodies are decoded: a content-encoding header describes the wire, not `text`.
    const coding = (first(responseHeaders, 'content-encoding') ?? '').toLowerCase()
    const decoded = coding === 'gzip' || coding === 'deflate' || coding === 'br' ? coding : undefined
    stored = { status: response.status, headers: storeHeaders(responseHeaders, redactor), body: body && decoded && !body.decoded ? { ...body, decoded } : body }
  }
  if (outcome === 'response' && stored === null) throw new Error(`$.log.entries[${seq - 1}].response.status: expected an HTTP status from 100 to 599 (or 0 for a failed request)`)

  // `har export` keeps the form the client used (origin-form for a reverse proxy).
  const url = redactor.url(extra?.url ?? request.url)
  let parsed: URL
  try {
    parsed = new URL(request.url)
  } catch {
    throw new Error(`$.log.entries[${seq - 1}].request.url: expected an absolute URL`)
  }
  const method = request.method.toUpperCase()
  const route = extra ? redactor.text(extra.route) : storm.decider.routeOf(method, parsed)
  const run = extra?.run ?? 'default'
  const ordinalKey = `${run}\u0000${route}`
  const call = (counters.get(run) ?? 0) + 1
  const ordinal = (counters.get(ordinalKey) ?? 0) + 1
  const started = entry.startedDateTime ? Math.max(0, (Date.parse(entry.startedDateTime) - t0) / 1000) : 0
  const requestBody = extra?.bodyUnknown ? null : await importBody(requestBytes, requestType, limit, redactor, extra?.requestBody)
  const exchange: CassetteExchange = {
    seq,
    run,
    call: extra ? extra.call : call,
    route,
    ordinal: extra ? extra.ordinal : ordinal,
    key: extra ? (extra.key === null ? null : redactor.text(extra.key)) : `#${ordinal}`,
    parent: extra?.parent ?? null,
    started: extra?.started ?? Math.round(started * 1e6) / 1e6,
    elapsed: extra?.elapsed ?? Math.max(0, Math.round((entry.time ?? 0) * 1000) / 1e6),
    request: { method, url, headers: storeHeaders(requestHeaders, redactor), body: requestBody, ...(extra?.bodyUnknown ? { bodyUnknown: true as const } : {}) },
    outcome,
    response: stored,
    upstream: extra ? redactStoredResponse(extra.upstream, redactor) : null,
    executed: extra ? extra.executed : response.status !== 0,
    fault: extra?.fault ?? null,
    retryAfter: extra?.retryAfter ?? null,
    error: extra ? extra.error : outcome === 'reset' ? 'ECONNRESET' : outcome === 'cancelled' ? 'CLIENT_ABORTED' : null,
    effects: (extra?.effects ?? []).map((effect) => ({ ...effect, name: redactor.text(effect.name), key: redactor.text(effect.key) })),
    ...(extra?.model ? { model: extra.model } : {}),
    ...(extra?.mcp ? { mcp: extra.mcp } : {}),
    ...(extra?.cut ? { cut: extra.cut } : {}),
    ...(extra?.trace ? { trace: extra.trace } : {}),
  }
  // The event timing indexes the body: kept only while the imported body is the one it indexes.
  const stream = extra?.stream
  if (stream && stored && stream.events.reduce((sum, event) => sum + event.bytes, 0) === (stored.body ? Buffer.byteLength(stored.body.data, stored.body.encoding) : 0)) {
    exchange.response = { ...stored, stream }
  }
  if (exchange.call !== null) {
    counters.set(run, exchange.call)
    counters.set(ordinalKey, exchange.ordinal as number)
  }
  return exchange
}

/** Build a cassette from a parsed HAR document. */
export async function importHar(document: unknown, options: ImportHarOptions = {}): Promise<Cassette> {
  const source = options.source ?? 'HAR'
  const parsed = harSchema.safeParse(document)
  if (!parsed.success) {
    const lines = formatIssues(parsed.error, document)
    throw new CassetteError('ERR_CASSETTE_INVALID', `Failed to import ${source}: ${lines[0]}. Expected a HAR 1.2 document ({"log": {"entries": […]}}).`, { details: lines.join('\n') })
  }
  const storm = options.storm ?? createStorm({})
  const limit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
  // Entries in the order their requests started (stable for equal times and missing ones).
  const entries = parsed.data.log.entries
    .map((entry, index) => ({ entry, index, at: entry.startedDateTime ? Date.parse(entry.startedDateTime) : Number.NaN }))
    .sort((a, b) => (Number.isNaN(a.at) || Number.isNaN(b.at) ? a.index - b.index : a.at - b.at || a.index - b.index))
  const t0 = entries.reduce((min, { at }) => (Number.isNaN(at) ? min : Math.min(min, at)), Number.POSITIVE_INFINITY)
  const counters = new Map<string, number>()
  const exchanges: CassetteExchange[] = []
  for (const [position, { entry }] of entries.entries()) {
    try {
      exchanges.push(await exchangeOf(entry, position + 1, Number.isFinite(t0) ? t0 : 0, storm, limit, counters))
    } catch (error) {
      throw new CassetteError('ERR_CASSETTE_INVALID', `Failed to import ${source}: ${(error as Error).message}.`)
    }
  }
  // A HAR written by `har export` carries the cassette header: keep its rules, seed and routes.
  const recorded = cassetteHeaderSchema.partial().safeParse(parsed.data.log._toolstorm)
  const previous = recorded.success ? recorded.data : {}
  const config = storm.config
  return Cassette.from(
    {
      recorded: previous.recorded ?? (Number.isFinite(t0) ? new Date(t0).toISOString() : new Date().toISOString()),
      source: 'har',
      targets: previous.targets ?? [],
      seed: previous.seed ?? config.seed,
      clock: previous.clock ?? 'real',
      maxCalls: previous.maxCalls ?? config.maxCalls,
      routes: previous.routes ?? { ...config.routes },
      rules: previous.rules ?? [],
      bodyLimit: limit,
      match: previous.match ?? defaultMatchOptions(),
      redaction: { keys: [...new Set([...(previous.redaction?.keys ?? []), ...config.redact.keys])], secrets: config.redact.secrets.length },
      // The recorded claims (already redacted by the recording) survive the round trip, unjudged.
      ...(previous.claims ? { claims: previous.claims } : {}),
    },
    exchanges,
    source,
  )
}
