/**
 * Fields every rule has, whatever its kind: ToolStorm's rule fields with `tool` renamed `route`.
 * A ToolStorm rule document converts by renaming that one key.
 */
import { z } from 'zod'

export const jsonValueSchema = z.json()

/** Seconds; finite and nonnegative. */
export const durationSchema = z
  .number({ error: 'expected a finite nonnegative number of seconds' })
  .min(0, { error: 'expected a finite nonnegative number of seconds' })

export const baseRuleShape = {
  /** Stable identity used in hashing, coverage and reports. */
  name: z.string({ error: 'expected a rule name (1–100 characters)' }).min(1, { error: 'expected a rule name (1–100 characters)' }).max(100, { error: 'expected a rule name (1–100 characters)' }),
  /** Case-sensitive glob over route names (`create_shipment`, `POST /v1/*`). */
  route: z.string({ error: 'expected a route name or glob (1–200 characters)' }).min(1, { error: 'expected a route name or glob (1–200 characters)' }).max(200, { error: 'expected a route name or glob (1–200 characters)' }),
  /** 1-based per-route ordinals this rule applies to; empty means every call. */
  calls: z
    .array(z.int({ error: 'expected positive integer ordinals' }).min(1, { error: 'expected positive integer ordinals' }), { error: 'expected a list of positive integer ordinals' })
    .max(10_000)
    .refine((calls) => new Set(calls).size === calls.length, { error: 'expected ordinals without duplicates' })
    .transform((calls) => [...calls].sort((a, b) => a - b))
    .default([]),
  probability: z
    .number({ error: 'expected a probability between 0 and 1' })
    .min(0, { error: 'expected a probability between 0 and 1' })
    .max(1, { error: 'expected a probability between 0 and 1' })
    .default(1),
  /** Caps how many calls this rule is selected for (not how many trigger). */
  limit: z.int({ error: 'expected a positive integer or null' }).min(1, { error: 'expected a positive integer or null' }).nullable().default(null),
  /** Seconds; its meaning depends on the kind (latency, Retry-After, time before a timeout answers). */
  delay: durationSchema.default(0),
  /** JSON body served by `replace`; ignored by other kinds. */
  replacement: jsonValueSchema.nullable().default(null),
} as const

export interface BaseRule {
  readonly name: string
  readonly route: string
  readonly kind: string
  readonly calls: readonly number[]
  readonly probability: number
  readonly limit: number | null
  readonly delay: number
  readonly replacement: z.infer<typeof jsonValueSchema> | null
}

export const SEED_LIMIT = 2 ** 53 - 1

/** A run's seed; report and cassette headers carry it too, so it sits below them. */
export const seedSchema = z
  .int({ error: 'expected an integer seed within ±(2^53−1)' })
  .min(-SEED_LIMIT, { error: 'expected an integer seed within ±(2^53−1)' })
  .max(SEED_LIMIT, { error: 'expected an integer seed within ±(2^53−1)' })
