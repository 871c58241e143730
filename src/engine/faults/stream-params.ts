/** Rule fields shared by the stream faults. */
import { z } from 'zod'
import type { BaseRule } from '../schema/rule-base.js'
import { DELTA_KINDS, type DeltaKind } from '../streams/deltas.js'

const countSchema = z
  .int({ error: 'expected a nonnegative integer' })
  .min(0, { error: 'expected a nonnegative integer' })
  .max(Number.MAX_SAFE_INTEGER, { error: 'expected a nonnegative integer' })

export const afterSchema = countSchema.default(0)

/** `after` of the faults that take `at`: its default depends on `at` (`afterOf`), so it stays unset here. */
export const afterOrAtDefaultSchema = countSchema.optional()

/** Which deltas of a model stream a fault counts and acts inside. */
export const atSchema = z.enum(DELTA_KINDS, { error: 'expected "text" or "tool_arguments"' })

export interface AfterRule extends BaseRule {
  /** Events (or, for `truncate`, bytes; with `at`, deltas of that kind) delivered before the fault acts. */
  readonly after: number
}

export interface AtRule extends BaseRule {
  /** Events delivered before the fault acts; with `at`, deltas of that kind. Unset: `afterOf`. */
  readonly after?: number | undefined
  /** Count and cut inside these deltas of a model stream instead of whole events. */
  readonly at?: DeltaKind | undefined
}

/**
 * `after` as the fault uses it. Unset, 0 events; with `at`, 1 delta: a cut or stall "inside the
 * tool call's arguments" leaves the client holding the first non-empty piece of them (half a JSON
 * object), never before the first one (the client would hold nothing of it).
 */
export function afterOf(rule: AtRule): number {
  return rule.after ?? (rule.at ? 1 : 0)
}
