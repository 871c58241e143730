/**
 * Failures already known: `--baseline FILE` (an earlier `--json`, for a branch against main) and
 * `--allow FILE` (failures accepted, each with its reason). Only a failure neither knows makes the
 * exit code 1; known ones stay in the matrix, marked.
 */
import { z } from 'zod'
import { ConfigError } from '../errors.js'
import { docsUrl } from '../docs-url.js'
import { formatIssues } from '../engine/schema/format-issues.js'
import { readInputDocument } from '../io/read-input-file.js'
import { exitCodeOf, exploreResultSchema, type ExploreResult } from './explore-result.js'

export const allowListSchema = z.strictObject({
  version: z.literal(1, { error: 'expected allow list version 1' }).default(1),
  /** Variation ids (as `toolstorm explore` prints them), with why each is accepted. */
  allow: z.array(z.union([z.string().min(1), z.strictObject({ id: z.string().min(1), reason: z.string().max(500).optional() })])).max(10_000),
})

export interface KnownFailures {
  /** An earlier explore's result: its failures are known. */
  readonly baseline?: ExploreResult | undefined
  /** Accepted failures' ids. */
  readonly allow?: readonly string[] | undefined
}

function invalid(file: string, what: string, error: z.ZodError, input: unknown): ConfigError {
  const lines = formatIssues(error, input)
  return new ConfigError(`Failed to read ${what} ${file}: ${lines[0]}${lines.length > 1 ? ` (and ${lines.length - 1} more)` : ''}. See ${docsUrl('explore.md')}.`, { details: lines.join('\n') })
}

/** An earlier `toolstorm explore --json` file. */
export async function loadExploreBaseline(file: string): Promise<ExploreResult> {
  const document = await readInputDocument(file, { what: 'the explore baseline (--baseline)' })
  const parsed = exploreResultSchema.safeParse(document)
  if (!parsed.success) throw invalid(file, 'the explore baseline (an earlier --json)', parsed.error, document)
  return parsed.data
}

/** An allow list (JSON or YAML): `{ version: 1, allow: ["<id>", { id, reason }] }`. */
export async function loadAllowList(file: string): Promise<string[]> {
  const document = await readInputDocument(file, { yaml: true, what: 'the allow list (--allow)' })
  const parsed = allowListSchema.safeParse(document)
  if (!parsed.success) throw invalid(file, 'the allow list', parsed.error, document)
  return parsed.data.allow.map((entry) => (typeof entry === 'string' ? entry : entry.id))
}

/** Mark the known failures and recount what decides the exit code. */
export function applyKnown(result: ExploreResult, known: KnownFailures): ExploreResult {
  const earlier = new Set(known.baseline?.variations.filter((variation) => variation.status === 'fail').map((variation) => variation.id) ?? [])
  const allowed = new Set(known.allow ?? [])
  const variations = result.variations.map((variation) => {
    if (variation.status !== 'fail') return variation
    if (earlier.has(variation.id)) return { ...variation, known: 'baseline' as const }
    if (allowed.has(variation.id)) return { ...variation, known: 'allowed' as const }
    return variation
  })
  const newFailures = variations.filter((variation) => variation.status === 'fail' && variation.known === undefined).length
  return { ...result, variations, summary: { ...result.summary, newFailures }, exitCode: exitCodeOf({ ...result.summary, newFailures }, result.skipped) }
}
