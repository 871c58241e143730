/**
 * Secret redaction for every sink: cassettes, reports, logs and the dashboard.
 */

/* Redactor */
export { createRedactor, defaultRedactor } from './redactor.js'
export type { Redactor, RedactorOptions } from './redactor.js'
export { REDACTED } from './redacted-marker.js'
export { RedactionCollisionError } from './redaction-collision-error.js'
export type { JsonValue } from '../json/canonical-json.js'

/* Building blocks */
export { CREDENTIAL_PATTERNS, isTokenLike } from './credential-patterns.js'
export type { CredentialPattern } from './credential-patterns.js'
export { DEFAULT_SECRET_KEYS, normaliseSecretName } from './secret-names.js'
