/**
 * Headers of an intercepted request, made ready to forward: hop-by-hop headers (RFC 9110 §7.6.1,
 * plus those named in `Connection`) and toolstorm's control headers removed.
 */
import type { ForwardOptions } from '../engine/exchange-transport.js'
import { HOP_BY_HOP_HEADERS } from '../engine/http.js'

/**
 * Build the header map an in-process client sends upstream. `host` is dropped: the client
 * library sets it from the URL (the proxy's `forwardHeaders` sets it instead).
 */
export function fetchRequestHeaders(headers: Iterable<[string, string]>, options: ForwardOptions): Record<string, string> {
  const out: Record<string, string> = {}
  let connectionTokens: string[] = []
  for (const [name, value] of headers) {
    const lower = name.toLowerCase()
    if (lower === 'connection') connectionTokens = value.split(',').map((token) => token.trim().toLowerCase())
    out[lower] = value
  }
  for (const name of [...HOP_BY_HOP_HEADERS, ...connectionTokens, ...options.removeHeaders, 'host']) delete out[name]
  for (const [name, value] of Object.entries(options.setHeaders)) out[name] = value
  return out
}
