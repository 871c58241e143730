import { ConfigError } from '../../errors.js'

const kRedactionCollision = Symbol.for('toolstorm.redaction-collision-error')

/**
 * Redacting the keys of one JSON object made two of them identical.
 *
 * The field is never dropped silently (spec §5.5): the caller must keep secrets out of
 * object keys, or declare fewer literal secrets.
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

  // `ToolstormError` brands every subclass alike; without this override any toolstorm error
  // would pass `instanceof RedactionCollisionError`.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[kRedactionCollision] === true
  }

  get [kRedactionCollision](): boolean {
    return true
  }
}
