/**
 * A cassette as HAR 1.2 (what browsers' devtools and Polly.JS read). Standard fields carry what
 * HAR can say: method, absolute URL, headers, query, bodies (binary as base64), status, timings.
 * A connection reset is exported as browsers export it: status 0 with `_error`
 * (`net::ERR_CONNECTION_RESET`). Everything HAR cannot say (route, ordinal, key, run, the fault,
 * the upstream's real answer behind a lost response, effects, truncation, a stream's event
 * timing, model-call metadata) goes in a custom
 * `_toolstorm` field per entry, so `har import` gets the cassette back. A body cut at the body
 * limit says so where any HAR viewer shows it too: its `comment`, and a `size` larger than its text.
 */
import { STATUS_CODES } from 'node:http'
import type { CassetteExchange, CassetteHeader, StoredBody, StoredHeaders } from '../format/cassette-schema.js'
import { VERSION } from '../../version.js'
import type { Cassette } from '../format/cassette.js'
import { splitUrl } from '../format/match-key.js'
import { headerOf } from '../format/store-headers.js'

export interface HarNameValue {
  name: string
  value: string
}

/** Where an origin-form URL went: the reverse-mode target it was mounted on, else a placeholder origin. */
export function absoluteUrl(url: string, targets: readonly string[]): string {
  if (!url.startsWith('/')) return url
  for (const target of targets) {
    const eq = target.indexOf('=')
    const named = eq > 0 && !target.slice(0, eq).includes('/')
    const name = named ? target.slice(0, eq) : null
    const base = (named ? target.slice(eq + 1) : target).replace(/\/$/, '')
    if (name === null) continue
    if (url === `/${name}` || url.startsWith(`/${name}/`) || url.startsWith(`/${name}?`)) return base + url.slice(name.length + 1)
  }
  const unnamed = targets.find((target) => !/^[^/=]+=/.test(target))
  return (unnamed ? unnamed.replace(/\/$/, '') : 'http://localhost') + url
}

function nameValues(headers: StoredHeaders): HarNameValue[] {
  const out: HarNameValue[] = []
  for (const [name, value] of Object.entries(headers)) for (const one of Array.isArray(value) ? value : [value]) out.push({ name, value: one })
  return out
}

function queryString(url: string): HarNameValue[] {
  const { query } = splitUrl(url)
  if (!query) return []
  return query.split('&').filter(Boolean).map((pair) => {
    const eq = pair.indexOf('=')
    const decode = (text: string) => {
      try {
        return decodeURIComponent(text.replace(/\+/g, ' '))
      } catch {
        return text
      }
    }
    return { name: decode(eq < 0 ? pair : pair.slice(0, eq)), value: eq < 0 ? '' : decode(pair.slice(eq + 1)) }
  })
}

/** Stored-body metadata HAR has no field for. */
function bodyMeta(body: StoredBody | null): Omit<StoredBody, 'data'> | null {
  if (body === null) return null
  const { data: _data, ...meta } = body
  return meta
}

/** A HAR `comment` for a body cut at the body limit (none for a whole body). */
function cutComment(body: StoredBody | null): { comment: string } | Record<string, never> {
  if (!body?.truncated) return {}
  const stored = Buffer.byteLength(body.data, body.encoding)
  return { comment: `toolstorm: truncated at the body limit: only the first ${stored} bytes${body.decoded ? ' (decoded)' : ''} of ${body.size} are stored; a replay breaks off after them` }
}

function mimeTypeOf(headers: StoredHeaders, fallback: string): string {
  return headerOf(headers, 'content-type') ?? fallback
}

function harEntry(exchange: CassetteExchange, header: CassetteHeader): Record<string, unknown> {
  const recordedMs = Date.parse(header.recorded)
  const request = exchange.request
  const response = exchange.response
  const url = absoluteUrl(request.url, header.targets)
  const requestBody = request.body
  const broken = exchange.outcome === 'reset' || (exchange.outcome === 'error' && response === null)
  const harResponse = response
    ? {
        status: response.status,
        statusText: STATUS_CODES[response.status] ?? '',
        httpVersion: 'HTTP/1.1',
        cookies: [],
        headers: nameValues(response.headers),
        content: {
          size: response.body?.size ?? 0,
          mimeType: mimeTypeOf(response.headers, 'x-unknown'),
          ...(response.body ? { text: response.body.data, ...(response.body.encoding === 'base64' ? { encoding: 'base64' } : {}) } : {}),
          ...cutComment(response.body),
        },
        redirectURL: headerOf(response.headers, 'location') ?? '',
        headersSize: -1,
        bodySize: response.body?.size ?? 0,
        ...(exchange.outcome === 'error' ? { _error: 'net::ERR_CONNECTION_RESET' } : exchange.outcome === 'cancelled' ? { _error: 'net::ERR_ABORTED' } : {}),
      }
    : {
        status: 0,
        statusText: '',
        httpVersion: '',
        cookies: [],
        headers: [],
        content: { size: 0, mimeType: 'x-unknown' },
        redirectURL: '',
        headersSize: -1,
        bodySize: -1,
        _error: broken ? 'net::ERR_CONNECTION_RESET' : 'net::ERR_ABORTED',
      }
  const elapsedMs = exchange.elapsed * 1000
  return {
    startedDateTime: new Date(recordedMs + exchange.started * 1000).toISOString(),
    time: elapsedMs,
    request: {
      method: request.method,
      url,
      httpVersion: 'HTTP/1.1',
      cookies: [],
      headers: nameValues(request.headers),
      queryString: queryString(url),
      ...(requestBody
        ? { postData: { mimeType: mimeTypeOf(request.headers, 'application/octet-stream'), text: requestBody.data, ...(requestBody.encoding === 'base64' ? { _encoding: 'base64' } : {}), ...cutComment(requestBody) } }
        : {}),
      headersSize: -1,
      bodySize: requestBody?.size ?? 0,
    },
    response: harResponse,
    cache: {},
    timings: { blocked: -1, dns: -1, connect: -1, ssl: -1, send: 0, wait: elapsedMs, receive: 0 },
    // Where any HAR viewer shows it: the trace the request was sent under (docs/claims.md).
    ...(exchange.trace ? { comment: `trace ${exchange.trace.traceId} span ${exchange.trace.parentSpanId}` } : {}),
    _toolstorm: {
      seq: exchange.seq,
      run: exchange.run,
      call: exchange.call,
      route: exchange.route,
      ordinal: exchange.ordinal,
      key: exchange.key,
      parent: exchange.parent,
      started: exchange.started,
      elapsed: exchange.elapsed,
      url: request.url,
      ...(request.bodyUnknown ? { bodyUnknown: true } : {}),
      requestBody: bodyMeta(requestBody),
      responseBody: bodyMeta(response?.body ?? null),
      outcome: exchange.outcome,
      upstream: exchange.upstream,
      executed: exchange.executed,
      fault: exchange.fault,
      retryAfter: exchange.retryAfter,
      error: exchange.error,
      effects: exchange.effects,
      ...(response?.stream ? { stream: response.stream } : {}),
      ...(exchange.model ? { model: exchange.model } : {}),
      ...(exchange.mcp ? { mcp: exchange.mcp } : {}),
      ...(exchange.cut ? { cut: exchange.cut } : {}),
      ...(exchange.trace ? { trace: exchange.trace } : {}),
    },
  }
}

/** The HAR 1.2 document for a cassette. */
export function exportHar(cassette: Cassette): Record<string, unknown> {
  const { exchanges: _count, version: _version, kind: _kind, ...header } = cassette.header
  return {
    log: {
      version: '1.2',
      creator: { name: 'toolstorm', version: VERSION },
      pages: [],
      entries: cassette.exchanges.map((exchange) => harEntry(exchange, cassette.header)),
      _toolstorm: header,
    },
  }
}
