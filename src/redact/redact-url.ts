/**
 * URL redaction: userinfo, secret-named query parameters, and every other component
 * decoded, scanned and re-encoded.
 *
 * @note Hand-split instead of `new URL()` so an unchanged URL comes back byte for byte (no
 * host lowercasing, no added `/`, no re-encoding), which keeps cassette match keys stable.
 */
import { encodeAroundMarkers, safePercentDecode } from './encoded-secrets.js'
import { isAuthorizationCode } from './oauth-code.js'
import { REDACTED } from './redacted-marker.js'

/** What URL redaction needs from a redactor. */
export interface UrlScrubber {
  text(value: string): string
  isSecretName(name: string): boolean
}

// RFC 3986 appendix B, which cannot fail to match.
const URI_PARTS = /^(?:([A-Za-z][A-Za-z0-9+.-]*):)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#([\s\S]*))?$/

/** Decode one component, scan it, and re-encode it only if something was redacted. */
function redactComponent(raw: string, scrubber: UrlScrubber, plusIsSpace: boolean): string {
  const plain = safePercentDecode(plusIsSpace ? raw.replace(/\+/g, ' ') : raw)
  const scrubbed = scrubber.text(plain)
  if (scrubbed !== plain) return encodeAroundMarkers(scrubbed)
  // A raw `+` in a query is a space, or a base64 character some client forgot to encode
  // (`Basic dXNl+…`): scan that reading too, so a token is not split in two.
  if (!plusIsSpace || !raw.includes('+')) return raw
  const literal = safePercentDecode(raw)
  const scrubbedLiteral = scrubber.text(literal)
  return scrubbedLiteral === literal ? raw : encodeAroundMarkers(scrubbedLiteral)
}

/** Redact `name=value&…` pairs: secret names lose their values, and so does an OAuth authorization `code` (oauth-code.ts); other values are scanned. */
export function redactQueryPairs(query: string, scrubber: UrlScrubber): string {
  const pairs = query.split('&').map((pair) => {
    const eq = pair.indexOf('=')
    return eq < 0 ? { pair, rawName: pair, plainName: '' } : { pair, rawName: pair.slice(0, eq), plainName: safePercentDecode(pair.slice(0, eq).replace(/\+/g, ' ')) }
  })
  let names: string[] | undefined
  return pairs
    .map(({ pair, rawName, plainName }) => {
      if (rawName === pair) return redactComponent(pair, scrubber, true)
      const name = redactComponent(rawName, scrubber, true)
      if (scrubber.isSecretName(plainName)) return `${name}=${REDACTED}`
      const rawValue = pair.slice(rawName.length + 1)
      if (plainName.toLowerCase() === 'code') {
        names ??= pairs.map((other) => other.plainName.toLowerCase())
        if (isAuthorizationCode(safePercentDecode(rawValue), names, 'pairs')) return `${name}=${REDACTED}`
      }
      return `${name}=${redactComponent(rawValue, scrubber, true)}`
    })
    .join('&')
}

function redactAuthority(authority: string, scrubber: UrlScrubber): string {
  const at = authority.lastIndexOf('@')
  const hostPort = authority.slice(at + 1)
  const host = redactComponent(hostPort, scrubber, false)
  if (at < 0) return host
  const userinfo = authority.slice(0, at)
  // A password always goes, and the username with it: `user:pass` pairs are one credential,
  // and a lone username is often a token (`https://<token>@github.com`).
  if (userinfo.includes(':')) return `${REDACTED}@${host}`
  const user = redactComponent(userinfo, scrubber, false)
  return `${user === userinfo ? user : REDACTED}@${host}`
}

/** Redact a URL, absolute or origin-form (`/path?query`). */
export function redactUrl(url: string, scrubber: UrlScrubber): string {
  const parts = URI_PARTS.exec(url)
  if (parts === null) return scrubber.text(url)
  const [, scheme, authority, path = '', query, fragment] = parts
  let out = scheme === undefined ? '' : `${scheme}:`
  if (authority !== undefined) out += `//${redactAuthority(authority, scrubber)}`
  out += path
    .split('/')
    .map((segment) => redactComponent(segment, scrubber, false))
    .join('/')
  if (query !== undefined) out += `?${redactQueryPairs(query, scrubber)}`
  if (fragment !== undefined) {
    // OAuth implicit flow puts tokens in the fragment: `#access_token=…&token_type=bearer`.
    out += `#${fragment.includes('=') ? redactQueryPairs(fragment, scrubber) : redactComponent(fragment, scrubber, false)}`
  }
  // Patterns that span components (a Slack webhook path after its host) need the whole URL.
  return scrubber.text(out)
}
