/**
 * Secrets hidden behind an encoding: percent-encoded runs (query strings, form bodies,
 * URLs inside text) and base64 runs (Basic credentials, base64 bodies, encoded JWTs).
 *
 * Each run is decoded and rescanned; when the decoded form holds a secret, the run is
 * rewritten. This is the lesson from undici's snapshot recorder, whose keys once held
 * reversible base64 of the request: a scrubber that only reads the plain form leaks.
 * @see docs/redaction.md ("inside percent-encoded or base64 runs") for what users are told.
 */
import { REDACTED } from './redacted-marker.js'

// Maximal runs of characters that may appear in a URL component. Brackets are excluded so
// `[REDACTED]` markers split runs and are never decoded again.
const URL_RUN = /[^\s"'<>\\{}|^`[\]]{3,}/g

// Maximal runs of the base64 and base64url alphabets, 16+ characters (12+ decoded bytes).
const BASE64_RUN = /[A-Za-z0-9+/_-]{16,}={0,2}/g

// Share of printable ASCII a decoded run needs before it is treated as text. Random binary
// scores about 38%, so this keeps the rescan to base64 that really encodes text.
const MIN_PRINTABLE_SHARE = 0.85

// Characters of a long run whose decoded bytes are checked first (a multiple of 4).
const PREFIX_CHECK = 1024

/** Decode percent-escapes, leaving malformed ones (`%zz`, a stray `%`) as they are. */
export function safePercentDecode(value: string): string {
  if (!value.includes('%')) return value
  return value.replace(/(?:%[0-9A-Fa-f]{2})+/g, (escapes) => {
    try {
      return decodeURIComponent(escapes)
    } catch {
      // Not valid UTF-8: decode byte by byte so an ASCII secret is still visible.
      return escapes.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    }
  })
}

/** Percent-encode a redacted value, leaving the `[REDACTED]` markers readable. */
export function encodeAroundMarkers(value: string): string {
  return value.split(REDACTED).map(encodeURIComponent).join(REDACTED)
}

// A run split at URL delimiters, keeping them: `a=1&b=2` → ['a', '=', '1', '&', 'b', '=', '2'].
const URL_DELIMITERS = /([/?#&=;,+:@])/

/** Rewrite percent-encoded runs of `text` whose decoded form `scrub` would change. */
export function redactPercentEncodedRuns(text: string, scrub: (decoded: string) => string): string {
  if (!text.includes('%')) return text
  return text.replace(URL_RUN, (run) => {
    if (!run.includes('%')) return run
    const decoded = safePercentDecode(run)
    if (decoded === run || scrub(decoded) === decoded) return run
    // Redact piece by piece so the URL structure survives; fall back to the whole run when a
    // secret spans several pieces (a PEM block encoded with `encodeURI`).
    const pieces = run.split(URL_DELIMITERS).map((piece, index) => {
      if (index % 2 === 1) return piece
      const plain = safePercentDecode(piece)
      const scrubbed = scrub(plain)
      return scrubbed === plain ? piece : encodeAroundMarkers(scrubbed)
    })
    const rewritten = pieces.join('')
    const check = safePercentDecode(rewritten)
    return scrub(check) === check ? rewritten : REDACTED
  })
}

/** Whether base64 `encoded` decodes to text (mostly printable ASCII); its bytes as UTF-8 text, else undefined. */
function decodedText(encoded: string): string | undefined {
  // Random binary fails within its first bytes: check a prefix before decoding a long run whole
  // (a base64 image in a model request is megabytes, and tried at four offsets below).
  if (encoded.length > PREFIX_CHECK && !mostlyPrintable(Buffer.from(encoded.slice(0, PREFIX_CHECK), 'base64'))) return undefined
  const bytes = Buffer.from(encoded, 'base64')
  if (bytes.length < 12 || !mostlyPrintable(bytes)) return undefined
  return bytes.toString('utf8')
}

function mostlyPrintable(bytes: Buffer): boolean {
  let printable = 0
  for (const byte of bytes) {
    if ((byte >= 0x20 && byte < 0x7f) || byte === 0x09 || byte === 0x0a || byte === 0x0d) printable++
  }
  return printable >= bytes.length * MIN_PRINTABLE_SHARE
}

/** Rewrite base64 runs of `text` that decode to text which `scrub` would change (by `mask(run)`, default `[REDACTED]`). */
export function redactBase64Runs(text: string, scrub: (decoded: string) => string, mask: (run: string) => string = () => REDACTED): string {
  return text.replace(BASE64_RUN, (run) => {
    // A run glued to base64-alphabet text before it (`session_QXV0…`, `abQXV0…`) starts the
    // encoded part 1 to 3 characters after a multiple of 4 from the run's start: decoded from the
    // run's start, every byte is shifted and none is text. Each offset is tried; a text prefix of
    // a multiple of 4 costs only a few garbage bytes, which the printable share absorbs.
    for (let offset = 0; offset < 4 && run.length - offset >= 16; offset++) {
      const decoded = decodedText(run.slice(offset))
      if (decoded !== undefined && scrub(decoded) !== decoded) return mask(run)
    }
    return run
  })
}
