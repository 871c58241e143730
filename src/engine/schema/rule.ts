/**
 * The rule schema: the common fields plus each kind's own, as a union discriminated by `kind`
 * and built from the faults a storm knows (faults/fault-registry.ts). Unknown keys are rejected.
 */
import { z } from 'zod'
import type { Fault } from '../faults/fault.js'
import { baseRuleShape, type BaseRule } from './rule-base.js'

function ruleVariant<K extends string, S extends z.ZodRawShape>(kind: K, params: S) {
  return z.strictObject({ ...baseRuleShape, kind: z.literal(kind), ...params })
}

/** The fields every rule shares, with `kind` as a plain enum of `kinds` (useful for editors and docs). */
export function commonRuleSchemaFor<K extends string>(kinds: readonly [K, ...K[]]) {
  return z.strictObject({ ...baseRuleShape, kind: z.enum(kinds) })
}

/** A parsed rule: the base fields plus whatever its kind adds. */
export type Rule = BaseRule & Readonly<Record<string, unknown>>

/** A rule as written in a rules file (defaults not yet applied). */
export type RuleInput = z.input<ReturnType<typeof commonRuleSchemaFor<string>>> & Record<string, unknown>

export type RuleSchema = z.ZodType<Rule, RuleInput>

/** One rule. `kind` picks the fault and which extra fields are allowed. */
export function ruleSchemaFor(faults: readonly Fault[], kinds: readonly string[]): RuleSchema {
  const variants = faults.map((fault) => ruleVariant(fault.type, fault.params))
  return z.discriminatedUnion('kind', variants as unknown as [ReturnType<typeof ruleVariant<string, z.ZodRawShape>>, ...ReturnType<typeof ruleVariant<string, z.ZodRawShape>>[]], {
    error: (issue) => (issue.code === 'invalid_union' ? `expected "kind" to be one of ${kinds.map((k) => `"${k}"`).join(', ')}` : undefined),
  }) as unknown as RuleSchema
}
