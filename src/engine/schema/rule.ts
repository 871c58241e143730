/**
 * The rule schema: the common fields plus each kind's own, as a union discriminated by `kind`
 * and built from the fault registry. Unknown keys are rejected.
 */
import { z } from 'zod'
import { FAULTS, FAULT_KINDS, type FaultKind } from '../faults/registry.js'
import { baseRuleShape, type BaseRule } from './rule-base.js'

function ruleVariant<K extends string, S extends z.ZodRawShape>(kind: K, params: S) {
  return z.strictObject({ ...baseRuleShape, kind: z.literal(kind), ...params })
}

const variants = FAULTS.map((fault) => ruleVariant(fault.type, fault.params))

/** The fields every rule shares, with `kind` as a plain enum (useful for editors and docs). */
export const commonRuleSchema = z.strictObject({ ...baseRuleShape, kind: z.enum(FAULT_KINDS) })

/** A parsed rule: the base fields plus whatever its kind adds. */
export type Rule = BaseRule & { readonly kind: FaultKind } & Readonly<Record<string, unknown>>

/** A rule as written in a rules file (defaults not yet applied). */
export type RuleInput = z.input<typeof commonRuleSchema> & Record<string, unknown>

/** One rule. `kind` picks the fault and which extra fields are allowed. */
export const ruleSchema = z.discriminatedUnion('kind', variants as unknown as [ReturnType<typeof ruleVariant<FaultKind, z.ZodRawShape>>, ...ReturnType<typeof ruleVariant<FaultKind, z.ZodRawShape>>[]], {
  error: (issue) => (issue.code === 'invalid_union' ? `expected "kind" to be one of ${FAULT_KINDS.map((k) => `"${k}"`).join(', ')}` : undefined),
}) as unknown as z.ZodType<Rule, RuleInput>
