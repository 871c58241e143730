/**
 * Protocol fields whose names only look like secrets: the secret-name heuristics (secret-names.ts)
 * would redact them by a word they contain (`token`, `auth`, `authorization`, `session`, `secret`),
 * but they hold identifiers, URLs, algorithm names or counters that a replayed client needs as
 * recorded. Redacting them broke replay (#37): a replayed MCP tool call delivered no progress
 * (`progressToken`), and an OAuth client found no authorization server in the discovery documents
 * it replayed (`authorization_servers`, `token_endpoint`).
 *
 * Their values are still scanned like every other value: a credential shape (a JWT, `ghp_…`) or a
 * literal secret under one of these names is redacted all the same. A user's redaction keys win
 * over this list (`--redact-key progressToken` redacts it again).
 *
 * What stays secret is the credentials these protocols carry: `access_token`, `refresh_token`,
 * `id_token`, `client_secret`, `registration_access_token`, `Authorization`, `Mcp-Session-Id`.
 */

/** Normalised names (secret-names.ts: snake_case, lower case) that are never secret by name. */
const PROTOCOL_FIELDS = new Set([
  // MCP: the token a client picks for the progress of one request; the server echoes it in every
  // `notifications/progress` (cursors, `nextCursor`, hold no secret word already).
  'progress_token',
  // OAuth 2.0 Protected Resource Metadata (RFC 9728): where the authorization servers are.
  'authorization_servers',
  // Authorization Server Metadata (RFC 8414) and OpenID Connect Discovery: endpoints are URLs
  // (any `…_endpoint`, below), the rest names methods and algorithms.
  'require_pushed_authorization_requests',
  'check_session_iframe',
  // Dynamic Client Registration (RFC 7591): the client's chosen methods and algorithms, and when
  // its secret expires (a number; `client_secret` itself stays secret).
  'token_endpoint_auth_method',
  'token_endpoint_auth_signing_alg',
  'id_token_signed_response_alg',
  'id_token_encrypted_response_alg',
  'id_token_encrypted_response_enc',
  'authorization_signed_response_alg',
  'authorization_encrypted_response_alg',
  'authorization_encrypted_response_enc',
  'client_secret_expires_at',
])

/**
 * Last words of metadata names: `…_endpoint` holds a URL (`token_endpoint`,
 * `end_session_endpoint`, `device_authorization_endpoint`), `…_supported` a list of methods or a
 * flag (`token_endpoint_auth_methods_supported`, `id_token_signing_alg_values_supported`).
 */
const METADATA_LAST_WORDS = new Set(['endpoint', 'supported'])

/** Whether a normalised name is a protocol field that only looks like a secret. */
export function isProtocolField(normalised: string): boolean {
  if (PROTOCOL_FIELDS.has(normalised)) return true
  const last = normalised.slice(normalised.lastIndexOf('_') + 1)
  return METADATA_LAST_WORDS.has(last) && normalised.includes('_')
}
