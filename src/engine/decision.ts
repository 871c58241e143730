/**
 * The deterministic draw behind every probabilistic choice.
 *
 * A rule fires for a call iff N < probability × 2^64, where N is the first 8 bytes (big-endian)
 * of SHA-256 over the canonical JSON `[seed, ruleName, routeName, key]`. The draw is a pure
 * function of those four values, so traffic to another route never shifts a route's schedule,
 * and adding a rule never changes another rule's draws. This is ToolStorm's algorithm, bit for bit.
 * @see ../../docs/rules.md#decisions
 */
import { createHash } from 'node:crypto'
import { canonicalJson } from '../json/canonical-json.js'

const TWO_64 = 2 ** 64

/** The 64-bit draw N for `(seed, ruleName, routeName, key)`. */
export function drawValue(seed: number, ruleName: string, routeName: string, key: string): bigint {
  const digest = createHash('sha256').update(canonicalJson([seed, ruleName, routeName, key]), 'utf8').digest()
  return digest.readBigUInt64BE(0)
}

/**
 * Whether a rule with `probability` fires for this draw.
 * @note N is an integer, so N < p·2^64 ⇔ N < ceil(p·2^64); the product is exact in binary
 * floating point, and N is never converted to a JS number.
 */
export function drawFires(draw: bigint, probability: number): boolean {
  if (probability >= 1) return true
  if (probability <= 0) return false
  return draw < BigInt(Math.ceil(probability * TWO_64))
}

/** Convenience: decide directly from the four inputs. */
export function decide(seed: number, ruleName: string, routeName: string, key: string, probability: number): boolean {
  if (probability >= 1) return true
  if (probability <= 0) return false
  return drawFires(drawValue(seed, ruleName, routeName, key), probability)
}
