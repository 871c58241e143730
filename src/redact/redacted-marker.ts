/**
 * The placeholder every redacted value or substring is replaced with.
 *
 * @note It contains `[` and `]` on purpose: no credential pattern, base64 run or query
 * value class matches those characters, so redacting an already redacted text is a no-op.
 */
export const REDACTED = '[REDACTED]'

/**
 * The placeholder for a secret inside binary data, as long as the secret: `[REDACTED]` then `*`
 * (only `*` for a secret shorter than it), so lengths and offsets in the binary format stay.
 */
export function sameLengthMask(secret: string): string {
  return secret.length >= REDACTED.length ? REDACTED + '*'.repeat(secret.length - REDACTED.length) : '*'.repeat(secret.length)
}
