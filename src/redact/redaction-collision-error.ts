import { ConfigError } from '../errors.js'

/**
 * Redacting the keys of one JSON object made two of them identical.
 *
 * The field is never dropped silently (spec §5.5): the caller must keep secrets out of
 * object keys, or declare fewer literal secrets. A `ConfigError`, so the CLI and admin API
 * map it to `ERR_CONFIG_INVALID`.
 */
export class RedactionCollisionError extends ConfigError {
  /** The object key both original keys became, already redacted. */
  readonly key: string

  constructor(key: string) {
    super(
      `Failed to redact a JSON object: redaction creates ambiguous dictionary keys (two keys become ${JSON.stringify(key)}). Keep secrets out of object keys.`,
    )
    this.key = key
  }
}
