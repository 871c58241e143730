/**
 * The redactor every sink goes through: cassettes on disk, reports, logs and the dashboard.
 *
 * It combines three detectors: secret *names* (JSON keys, headers, query and form fields,
 * `name=value` in text), credential *shapes* (provider token formats, PEM keys, JWTs, URL
 * userinfo) and the *literal* secrets a user declares. Encoded forms (percent-encoding,
 * base64) are decoded and rescanned.
 * @see docs/redaction.md for what users are told it redacts, and how to add their own secrets.
 * @note Redaction is conservative filtering, not PII detection, and it is tuned to redact too
 * much rather than too little. Redacted values compare equal in replay, because recording and
 * replay run the same redactor.
 * @note Known over-redactions: any field whose name has a secret word loses its value, even
 * when that value is harmless (`token` in OpenAI logprobs, `signature` in reasoning blocks,
 * `session` objects, `password_min_length`; protocol fields such as `progressToken` and OAuth
 * metadata are kept: protocol-fields.ts);
 * `Token`/`Bearer`/`Basic` followed by a token-like word (`Token abc=def`) loses the word;
 * a base64 or percent-encoded run that decodes to text holding a secret is replaced whole.
 * @note Known gaps: standalone secrets without a recognisable shape (an AWS secret access key,
 * an Azure OpenAI key, a bare 32-hex key) are caught only under a secret name or as a literal;
 * a secret split across two separate `text()` calls (two stream chunks) is not seen whole;
 * compressed bodies must be decompressed before they reach `body()`; header names are kept
 * as they are; JSON nested deeper than the call stack makes `json()` throw a RangeError
 * (`body()` then falls back to `text()`).
 */
import { ConfigError } from '../errors.js'
import type { JsonValue } from '../json/canonical-json.js'
import { redactCredentialShapes } from './credential-patterns.js'
import { redactBase64Runs, redactPercentEncodedRuns } from './encoded-secrets.js'
import { createLiteralScrubber } from './literal-secrets.js'
import { redactBody } from './redact-body.js'
import { CHALLENGE_HEADERS, redactChallenge } from './redact-challenge.js'
import { redactJson } from './redact-json.js'
import { redactAuthorizationCodes } from './oauth-code.js'
import { redactUrl } from './redact-url.js'
import { REDACTED, sameLengthMask } from './redacted-marker.js'
import { createSecretNameMatcher } from './secret-names.js'
import { redactSecretAssignments } from './secret-assignments.js'

/** Extra secret names and literal secrets on top of the defaults. */
export interface RedactorOptions {
  /** Extra secret field/header/query names, matched after normalisation (`X-My-Key` = `x_my_key`). */
  keys?: readonly string[]
  /** Literal secret values, replaced wherever they occur (strings, keys, encoded forms). */
  secrets?: readonly string[]
}

/** Scrubs secrets out of values before they reach any sink. */
export interface Redactor {
  /** Deep copy of a JSON value: values of secret-named keys (any depth, any type incl. objects/arrays) become REDACTED, the key stays; credential-shaped substrings and literal secrets inside every string value AND every object key are replaced by REDACTED. Numbers/bools untouched. Never mutates the input. Throws RedactionCollisionError if scrubbing makes two keys of one object identical. */
  json(value: JsonValue): JsonValue
  /** Free text: credential-shaped substrings and literals replaced. */
  text(value: string): string
  /** Header map (case of names preserved): secret headers' whole values become REDACTED (arrays keep their length), `Location`/`Content-Location`/`Referer` go through url(), `WWW-Authenticate`/`Proxy-Authenticate` through text() one auth-param at a time (redact-challenge.ts), other values through text(); undefined values are dropped. */
  headers(h: Record<string, string | string[] | undefined>): Record<string, string | string[]>
  /** A URL (absolute or origin-form path+query): userinfo password (and username) replaced, query parameters with secret names get REDACTED values, other query values and path segments go through text() after percent-decoding and are re-encoded only if changed. Returns the URL as a string; keeps it parseable. */
  url(u: string): string
  /** A body as text, given its content-type: JSON (application/json, +json) → parse, json(), re-serialise compactly (if not parseable, fall back to text()); NDJSON line by line; application/x-www-form-urlencoded → secret-named fields REDACTED, others text(); text/event-stream (SSE) → each event's `data:` payload treated as JSON if it parses else text; multipart → secret-named parts REDACTED, others by their own type; anything else → text(). A body with nothing to redact comes back byte for byte. */
  body(text: string, contentType: string | undefined): string
  /** Whether a field/header/query name is secret. */
  isSecretName(name: string): boolean
  /** True when text(x) !== x would hold, i.e. the value contains a credential shape or a literal secret. */
  containsSecret(value: string): boolean
  /**
   * Binary data read as latin1 (one character per byte): credential shapes and literal secrets,
   * also inside base64 runs, replaced by a mask of the same length (`[REDACTED]***…`), so the
   * data keeps its length and offsets. Secret-name assignments (`pwd=…`) and percent-encoded
   * runs are not looked for: random bytes form them by chance (`x.PWD:…` about once in a few
   * hundred 3 MiB bodies), which would corrupt a binary body that holds no secret at all.
   */
  binary(value: string): string
}

// Decoded runs are rescanned, and may hold encoded runs themselves (a base64 body carrying a
// Basic header). Two levels cover that without letting crafted input recurse without end.
const MAX_DECODE_DEPTH = 2

// A cheap test that every scan below needs to pass before it can change anything, so the
// many short strings of a JSON document (`"item 42"`) skip some forty regex passes:
// assignments need `:`, `=` or `</`; encoded runs need `%` or a 16-character base64 run;
// credential shapes need a 12-character run of token characters, `://`, `-----BEGIN`, the
// Azure `Q~` infix, or an auth scheme word. A new credential pattern must keep this true (the
// fake-secret corpus puts every shape in short strings, so a miss fails there).
const MAY_HOLD_CREDENTIAL = /[A-Za-z0-9+/_-]{12}|[:=%~<]|-----|\b(?:bearer|basic|token|bot)\b/i

// Header values that are URLs: a redirect can carry a token in its query.
const URL_HEADERS = new Set(['location', 'content-location', 'referer'])

function validateStrings(values: readonly string[] | undefined): readonly string[] {
  if (values === undefined) return []
  if (!Array.isArray(values) || values.some((value) => typeof value !== 'string' || value.length === 0)) {
    throw new ConfigError('Failed to create a redactor: redaction keys and secrets must be nonempty strings.')
  }
  return values
}

/**
 * Create a redactor with ToolStorm's default secret keys plus `options`.
 * @example
 * const redactor = createRedactor({ secrets: ['hunter2'] })
 * redactor.text('login with hunter2') // 'login with [REDACTED]'
 */
export function createRedactor(options: RedactorOptions = {}): Redactor {
  const keys = validateStrings(options.keys)
  const secrets = validateStrings(options.secrets)
  const isSecretName = createSecretNameMatcher(keys)
  const scrubLiterals = createLiteralScrubber(secrets)
  const maskLiterals = createLiteralScrubber(secrets, sameLengthMask)

  const scrub = (value: string, depth: number): string => {
    let out = scrubLiterals(value)
    if (!MAY_HOLD_CREDENTIAL.test(out)) return out
    out = redactSecretAssignments(out, isSecretName)
    out = redactAuthorizationCodes(out)
    out = redactCredentialShapes(out)
    if (depth < MAX_DECODE_DEPTH) {
      const deeper = (decoded: string): string => scrub(decoded, depth + 1)
      out = redactPercentEncodedRuns(out, deeper)
      out = redactBase64Runs(out, deeper)
    }
    return out
  }

  const redactor: Redactor = {
    json: (value) => redactJson(value, redactor).value,
    text: (value) => scrub(value, 0),
    headers: (h) => {
      const out: Record<string, string | string[]> = {}
      for (const [name, value] of Object.entries(h)) {
        if (value === undefined) continue
        const secret = isSecretName(name)
        const lower = name.toLowerCase()
        const asUrl = URL_HEADERS.has(lower)
        const challenge = CHALLENGE_HEADERS.has(lower)
        const one = (v: string): string => (secret ? REDACTED : asUrl ? redactUrl(v, redactor) : challenge ? redactChallenge(v, (text) => scrub(text, 0)) : scrub(v, 0))
        // defineProperty keeps a `__proto__` header an own property.
        Object.defineProperty(out, name, { value: Array.isArray(value) ? value.map(one) : one(value), enumerable: true, writable: true, configurable: true })
      }
      return out
    },
    url: (u) => redactUrl(u, redactor),
    body: (text, contentType) => redactBody(text, contentType, redactor),
    isSecretName,
    containsSecret: (value) => scrub(value, 0) !== value,
    binary: (value) => {
      const shapes = (text: string): string => redactCredentialShapes(maskLiterals(text), sameLengthMask)
      return redactBase64Runs(shapes(value), shapes, sameLengthMask)
    },
  }
  return redactor
}

/** A redactor with the default secret names and no literal secrets. */
export const defaultRedactor: Redactor = createRedactor()
