/**
 * How replay names requests and recorded exchanges in its table rows and its messages: by route
 * when that says more than `METHOD url`, by path when the cassette stores paths, and what a
 * truncated recorded body falls short by.
 */
import type { CassetteExchange } from '../format/cassette-schema.js'
import type { NormalisedRequest } from './replay-request.js'

/** `METHOD url`. */
function describe(method: string, url: string): string {
  return `${method} ${url}`
}

/** How a served exchange's response falls short of what was recorded (`truncated: …`), or null when it is whole. */
export function truncation(exchange: CassetteExchange): string | null {
  const body = exchange.response?.body
  if (!body?.truncated) return null
  const stored = Buffer.byteLength(body.data, body.encoding)
  return body.decoded ? `truncated: ${stored} bytes recorded (decoded) of a ${body.size}-byte ${body.decoded} body` : `truncated: ${stored} of ${body.size} bytes recorded`
}

/**
 * A request as the table and messages show it: an MCP call (or any route not named by method and
 * path) by its route first, as the cassette names it (`tools/call create_shipment · POST /mcp`);
 * a path when the cassette stores paths.
 */
export function describeSeen(seen: NormalisedRequest, pathsOnly: boolean): string {
  const request = describe(seen.method, pathsOnly ? originForm(seen.url) : seen.url)
  return seen.route === undefined || seen.route.startsWith(`${seen.method} `) ? request : `${seen.route} · ${request}`
}

/** `/path?query` of an absolute URL; an origin-form one as it is. */
function originForm(url: string): string {
  if (url.startsWith('/')) return url
  try {
    const parsed = new URL(url)
    return parsed.pathname + parsed.search
  } catch {
    return url
  }
}

/** An exchange as the table shows it: its route when that says more than `METHOD url`. */
export function describeExchange(exchange: CassetteExchange): string {
  const request = describe(exchange.request.method, exchange.request.url)
  return exchange.route === request || request.startsWith(exchange.route + '?') ? request : `${exchange.route} · ${request}`
}
