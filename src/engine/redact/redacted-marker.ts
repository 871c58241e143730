/**
 * The placeholder every redacted value or substring is replaced with.
 *
 * @note It contains `[` and `]` on purpose: no credential pattern, base64 run or query
 * value class matches those characters, so redacting an already redacted text is a no-op.
 */
export const REDACTED = '[REDACTED]'
