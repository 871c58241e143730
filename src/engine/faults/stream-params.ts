/** Rule fields shared by the stream faults. */
import { z } from 'zod'
import type { BaseRule } from '../schema/rule-base.js'
import { DELTA_KINDS, type DeltaKind } from '../streams/deltas.js'

const count = z
  .int({ error: 'expected a nonnegative integer' })
  .min(0, { error: 'expected a nonnegative integer' })
  .max(Number.MAX_SAFE_INTEGER, { error: 'expected a nonnegative integer' })

export const afterSchema = count.default(0)
/** `after` of the faults that take `at`: unset, its default depends on `at` (`afterOf`). */
export const afterOrAtDefaultSchema = count.optional()

/** Which deltas of a model stream a fault counts and acts inside. */
export const atSchema = z.enum(DELTA_KINDS, { error: 'expected "text" or "tool_arguments"' })

export interface AfterRule extends BaseRule {
  /** Events (or, for `truncate`, bytes; with `at`, deltas of that kind) delivered before the fault acts. */
  readonly after: number
}

export interface AtRule extends BaseRule {
  readonly after?: number | undefined
  /** Count and cut inside these deltas of a model stream instead of whole events. */
  readonly at?: DeltaKind | undefined
}

/** Unset `after`: 0 events, or with `at` 1 delta, so a cut "inside the arguments" leaves the client their first piece. */
export const afterOf = (rule: AtRule): number => rule.after ?? (rule.at ? 1 : 0)
