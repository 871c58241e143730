/**
 * The rules file: `{version, seed, routes, rules, maxCalls, redact, mcp}`, in JSON or YAML.
 * `version` defaults to 1, `seed` to 0, `routes` to none, `mcp` to detection without endpoints.
 */
import { z } from 'zod'
import type { Rule, RuleSchema } from './rule.js'
import { parseRoutePattern } from '../route-pattern.js'
import { DEFAULT_MCP_OPTIONS, mcpOptionsSchema } from './mcp-section.js'

import { SEED_LIMIT, seedSchema } from './rule-base.js'
export { SEED_LIMIT, seedSchema }
export const MAX_RULES = 100
/** Largest call budget a config may set. */
export const MAX_MAX_CALLS = 1_000_000
/** Calls itemized per run in reports; later calls are counted (`droppedCalls`), not listed. */
export const ITEMIZED_CALLS_LIMIT = 10_000

export const routeSpecSchema = z.string().superRefine((spec, ctx) => {
  const parsed = parseRoutePattern(spec)
  if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed })
})

/** An entry of `commits`: a glob over route names, as a rule's `route` (`POST /shipments`, `tools/call create_shipment`, `create_*`). */
const commitRouteSchema = z
  .string({ error: 'expected a route name or glob (1–200 characters)' })
  .min(1, { error: 'expected a route name or glob (1–200 characters)' })
  .max(200, { error: 'expected a route name or glob (1–200 characters)' })

export const redactOptionsSchema = z.strictObject({
  /** Extra secret field/header/query names. */
  keys: z.array(z.string().min(1)).default([]),
  /** Literal secret values to scrub wherever they appear. */
  secrets: z.array(z.string().min(1)).default([]),
})

/** The rules file whose rules are `ruleSchema`'s (a storm's faults: faults/fault-registry.ts). */
export function configSchemaFor(ruleSchema: RuleSchema) {
  return z
    .strictObject({
      $schema: z.string().optional(),
      version: z.literal(1, { error: 'expected version 1' }).default(1),
      seed: seedSchema.default(0),
      routes: z
        .record(z.string().min(1, { error: 'expected a route name (1–200 characters)' }).max(200), routeSpecSchema)
        .default({}),
      rules: z.array(ruleSchema).max(MAX_RULES, { error: `expected at most ${MAX_RULES} rules` }).default([]),
      /** Call budget per run: further calls are refused (never forwarded) and counted. Null: no budget. */
      maxCalls: z
        .int({ error: `expected an integer from 1 to ${MAX_MAX_CALLS}, or null` })
        .min(1, { error: `expected an integer from 1 to ${MAX_MAX_CALLS}, or null` })
        .max(MAX_MAX_CALLS, { error: `expected an integer from 1 to ${MAX_MAX_CALLS}, or null` })
        .nullable()
        .default(null),
      redact: redactOptionsSchema.default({ keys: [], secrets: [] }),
      /** MCP endpoints and detection (docs/mcp.md). */
      mcp: mcpOptionsSchema.default(DEFAULT_MCP_OPTIONS),
      /**
       * Routes whose calls commit (docs/claims.md): a claimed success with nothing committed under it
       * on one of them is a phantom success. Routes an effect was reported on count without being listed.
       */
      commits: z.array(commitRouteSchema).max(MAX_RULES, { error: `expected at most ${MAX_RULES} routes` }).default([]),
    })
    .superRefine((config, ctx) => {
      const seen = new Map<string, number>()
      config.rules.forEach((rule, index) => {
        const first = seen.get(rule.name)
        if (first !== undefined) ctx.addIssue({ code: 'custom', path: ['rules', index, 'name'], message: `expected a unique rule name ("${rule.name}" is also rules[${first}])` })
        else seen.set(rule.name, index)
      })
    })
}

export type ConfigSchema = ReturnType<typeof configSchemaFor>

export type StormConfig = Omit<z.output<ConfigSchema>, 'rules'> & { rules: Rule[] }
export type StormConfigInput = z.input<ConfigSchema>
