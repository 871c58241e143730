/**
 * Which field, header and query-parameter names hold secrets.
 *
 * A name is normalised first (camelCase split to snake_case, lowercase, `-`, `.`, spaces and the
 * brackets of form names such as `user[password]` turned into `_`), then it is secret when it:
 * 1. equals one of ToolStorm's default keys or a user key (normalised the same way);
 * 2. contains `private_key`, or has a word containing `password`, `passwd`, `passphrase`,
 *    `secret`, `credential`, `cookie`, `authorization`, `privatekey` or `signature` (but not
 *    a `non…` word such as `nonsecret`); or has a word `auth`, `pwd`, `sig`,
 *    `session` (also `sessionid`, `jsessionid`, `phpsessid`), or a word that is or ends in
 *    `token` (not `tokens`, and not a pagination or usage counter such as `next_token` or
 *    `token_count`);
 * 3. ends in `apikey`/`api_key`, or its last word is `key` with a word before it, unless that
 *    word marks an ordinary identifier (`idempotency_key`, `cache_key`, `public_key`, …);
 * and is not a protocol field that only looks like a secret (protocol-fields.ts: MCP's
 * `progressToken`, OAuth metadata such as `token_endpoint` and `authorization_servers`), unless
 * the user's keys name it.
 *
 * @note `signature` and `sig` count as secret: in presigned URLs (S3 `X-Amz-Signature`,
 * GCS `X-Goog-Signature`, Azure SAS `sig`) the signature is the bearer credential. The cost
 * is that webhook and reasoning-block signatures are redacted too; replay still matches,
 * because both sides redact to the same marker.
 * @note A bare `key` is not secret: it is too common as an ordinary identifier (map entries,
 * i18n keys, object-storage keys) and credentials stored under it are still caught by the
 * credential-shape scan.
 */

import { isProtocolField } from './protocol-fields.js'

/** ToolStorm's default secret keys (spec §5.5), in normalised form. */
export const DEFAULT_SECRET_KEYS: readonly string[] = [
  'password',
  'passwd',
  'secret',
  'token',
  'access_token',
  'refresh_token',
  'api_key',
  'apikey',
  'authorization',
  'cookie',
  'set_cookie',
  'credentials',
  'private_key',
  'client_secret',
  'session_token',
]

/**
 * OAuth's other secrets by name (RFC 7636, RFC 8628): PKCE's verifier, which redeems a code, and
 * a device flow's `device_code`, which the client polls the token endpoint with. (Its tokens, `id_token`
 * included, are secret by the word `token`; an authorization `code` by where it stands: oauth-code.ts.)
 */
const OAUTH_SECRET_KEYS = ['code_verifier', 'device_code']

const DEFAULT_KEYS: ReadonlySet<string> = new Set([...DEFAULT_SECRET_KEYS, ...OAUTH_SECRET_KEYS])

// Substrings that make any name secret, wherever they appear.
const SECRET_SUBSTRINGS = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'credential',
  'cookie',
  'authorization',
  'privatekey',
  'signature',
]

// Whole words (between `_`) that make a name secret.
const SECRET_WORDS = new Set(['auth', 'pwd', 'sig', 'session', 'sessionid', 'sessid'])

// `token_<word>` names that describe a token without holding one (LLM usage counters, OAuth
// `token_type`, token ids in logprobs).
const TOKEN_DESCRIPTOR_WORDS = new Set([
  'count',
  'counts',
  'type',
  'usage',
  'limit',
  'limits',
  'index',
  'id',
  'ids',
  'len',
  'length',
  'budget',
  'estimate',
  'logprob',
  'logprobs',
  'expiry',
  'expires',
  'expiration',
])

// `<word>_token` names that are opaque pagination cursors, not credentials.
const PAGINATION_WORDS = new Set(['next', 'page', 'continuation', 'pagination', 'cursor', 'prev', 'previous'])

// `<word>_key` names that are ordinary identifiers, not credentials.
const IDENTIFIER_KEY_QUALIFIERS = new Set([
  'idempotency',
  'cache',
  'sort',
  'partition',
  'primary',
  'foreign',
  'public',
  'dedup',
  'dedupe',
  'deduplication',
  'toolstorm',
  'row',
  'range',
  'hash',
  'routing',
  'object',
  'lookup',
  'ordering',
  'composite',
  'unique',
  'shard',
  'translation',
  'i18n',
])

// Longest name judged by its words; the longest header name in common use is under 50.
const MAX_NAME_LENGTH = 256

/** Normalise a name for matching: `X-Api-Key`, `xApiKey` and `x api key` all become `x_api_key`. */
export function normaliseSecretName(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z])(?=[A-Z][a-z])/g, '$1_')
    .toLowerCase()
    .replace(/[\s.[\]-]+/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '')
}

/** Whether a normalised name is secret by the heuristics alone (rules 2 and 3 above). */
function isSecretByShape(normalised: string): boolean {
  if (normalised.includes('private_key')) return true
  const words = normalised.split('_')
  // A `non…` word negates itself: `nonsecret` names a field that is explicitly not secret.
  if (words.some((word) => !word.startsWith('non') && SECRET_SUBSTRINGS.some((part) => word.includes(part)))) return true
  // Trailing numeric words (`x_hub_signature_256`, `api_key_2`) do not change what a name holds.
  while (words.length > 1 && /^[0-9]+$/.test(words[words.length - 1] as string)) words.pop()
  for (let i = 0; i < words.length; i++) {
    const word = words[i] as string
    if (SECRET_WORDS.has(word) || word.endsWith('sessionid') || word.endsWith('sessid')) return true
    if (word === 'token') {
      const next = words[i + 1]
      const previous = words[i - 1]
      if (next !== undefined && TOKEN_DESCRIPTOR_WORDS.has(next)) continue
      if (previous !== undefined && PAGINATION_WORDS.has(previous)) continue
      return true
    }
    // One-word compounds: `accesstoken`, `xsrftoken`, `csrfmiddlewaretoken`.
    if (word.endsWith('token') && word !== 'token') return true
  }
  const last = (words[words.length - 1] as string).replace(/[0-9]+$/, '')
  if (last.endsWith('apikey') || normalised.endsWith('api_key')) return true
  if (last === 'key' && words.length > 1) {
    return !IDENTIFIER_KEY_QUALIFIERS.has(words[words.length - 2] as string)
  }
  return false
}

/** Build a predicate for secret names from the default keys plus `extraKeys` (which win over the protocol fields). */
export function createSecretNameMatcher(extraKeys: readonly string[] = []): (name: string) => boolean {
  const userKeys = new Set(extraKeys.map(normaliseSecretName))
  // Bodies repeat the same few keys many times; a small cache keeps the scan cheap.
  const cache = new Map<string, boolean>()
  return (name: string): boolean => {
    // A name this long is data (a JSON key holding a document), not a field name.
    if (name.length > MAX_NAME_LENGTH) return false
    const cached = cache.get(name)
    if (cached !== undefined) return cached
    const normalised = normaliseSecretName(name)
    const secret = userKeys.has(normalised) || (!isProtocolField(normalised) && (DEFAULT_KEYS.has(normalised) || isSecretByShape(normalised)))
    if (cache.size >= 4096) cache.clear()
    cache.set(name, secret)
    return secret
  }
}
