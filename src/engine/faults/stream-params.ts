/** Rule fields shared by the stream faults. */
import { z } from 'zod'
import type { BaseRule } from '../schema/rule-base.js'

export const afterSchema = z
  .int({ error: 'expected a nonnegative integer' })
  .min(0, { error: 'expected a nonnegative integer' })
  .max(Number.MAX_SAFE_INTEGER, { error: 'expected a nonnegative integer' })
  .default(0)

export interface AfterRule extends BaseRule {
  /** Events (or, for `truncate`, bytes) delivered before the fault acts. */
  readonly after: number
}
