/**
 * What the proxy says when an upstream cannot be reached: the 502 body names the upstream (not
 * the proxy's own address the client called), and the console gets one line per upstream origin
 * and error code, not one per request: a dead upstream under load would flood it otherwise.
 * Both go through the storm's URL redaction (userinfo, secret query parameters).
 */
import type { Upstream } from '../targets.js'

/** Distinct failures remembered at most; past it the memory starts over (a line may repeat). */
const MAX_REMEMBERED = 1024

export interface UpstreamFailures {
  /** Note a failure; returns the upstream's URL, redacted, for the 502 body. */
  failed(upstream: Upstream, method: string, code: string): string
}

/**
 * @example
 * const failures = createUpstreamFailures((url) => storm.redactor.url(url), (line) => console.error(line))
 * failures.failed(upstream, 'GET', 'ECONNREFUSED') // 'http://127.0.0.1:4000/ship', logged once
 */
export function createUpstreamFailures(redactUrl: (url: string) => string, log: ((line: string) => void) | undefined): UpstreamFailures {
  const seen = new Set<string>()
  return {
    failed(upstream, method, code) {
      const url = redactUrl(upstream.origin + upstream.path)
      const key = `${upstream.origin} ${code}`
      if (log && !seen.has(key)) {
        if (seen.size >= MAX_REMEMBERED) seen.clear()
        seen.add(key)
        log(`upstream ${redactUrl(upstream.origin)} unreachable: ${code} (first for "${method} ${url}"; later ${code} failures of this upstream are not logged)`)
      }
      return url
    },
  }
}
