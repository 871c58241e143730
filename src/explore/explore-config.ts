/**
 * The explore config file (`--config FILE`, JSON or YAML): the fault table to use instead of the
 * default one, and per route (a glob over route names, first match wins) which faults to try or
 * that the route is left alone. Versioned; every error names the file and the field.
 *
 * @example
 * version: 1
 * faults: [timeout, response_lost, { name: slow, kind: latency, delay: 5 }]
 * routes:
 *   "POST /shipments": { faults: [response_lost, timeout] }
 *   "GET /health": { skip: true }
 */
import { z } from 'zod'
import { ConfigError } from '../errors.js'
import { docsUrl } from '../docs-url.js'
import { formatIssues } from '../engine/schema/format-issues.js'
import { globMatches } from '../engine/glob.js'
import { readInputDocument } from '../io/read-input-file.js'
import { checkFaultChoice, DEFAULT_FAULTS, faultsNamed, type FaultChoice } from './fault-catalogue.js'

const faultEntrySchema = z.union([
  z.string().min(1).max(100),
  z.looseObject({ name: z.string().min(1).max(100), kind: z.string().min(1).max(100) }),
], { error: 'expected a fault name ("timeout") or { name, kind, ...parameters }' })

export const exploreConfigSchema = z.strictObject({
  version: z.literal(1, { error: 'expected explore config version 1' }).default(1),
  /** The fault table, replacing the default one. */
  faults: z.array(faultEntrySchema).min(1).max(100).optional(),
  /** Per route glob: the faults to try there (names of the table, or inline), or `skip: true`. */
  routes: z.record(z.string().min(1).max(200), z.strictObject({ faults: z.array(faultEntrySchema).max(100).optional(), skip: z.boolean().default(false) })).default({}),
})

export type ExploreConfigInput = z.input<typeof exploreConfigSchema>

/** A config, resolved: the table, and per route glob what to try. */
export interface ExploreConfig {
  readonly faults: readonly FaultChoice[]
  readonly routes: ReadonlyArray<{ readonly glob: string; readonly faults: readonly FaultChoice[] | null; readonly skip: boolean }>
}

type FaultEntry = z.output<typeof faultEntrySchema>

function resolveEntries(entries: readonly FaultEntry[], table: readonly FaultChoice[], where: string): FaultChoice[] {
  const inline = entries.filter((entry): entry is Exclude<FaultEntry, string> => typeof entry !== 'string')
  const named = faultsNamed(entries.filter((entry): entry is string => typeof entry === 'string'), table, where)
  const made = inline.map((entry, index) => {
    const { name, ...rule } = entry
    return checkFaultChoice({ name, rule: rule as FaultChoice['rule'] }, `${where}[${index}] ("${name}")`)
  })
  // Written order is kept: names and inline faults interleave as the file lists them.
  return entries.map((entry) => (typeof entry === 'string' ? named.find((fault) => fault.name === entry)! : made.shift()!))
}

/** Validate a config document (`source` names it in errors). */
export function parseExploreConfig(input: unknown, source: string): ExploreConfig {
  const result = exploreConfigSchema.safeParse(input)
  if (!result.success) {
    const lines = formatIssues(result.error, input)
    throw new ConfigError(`Failed to read the explore config ${source}: ${lines[0]}${lines.length > 1 ? ` (and ${lines.length - 1} more)` : ''}. See ${docsUrl('explore.md')}.`, { details: lines.join('\n') })
  }
  const config = result.data
  const faults = config.faults ? resolveEntries(config.faults, DEFAULT_FAULTS, `${source} $.faults`) : DEFAULT_FAULTS
  const names = new Set<string>()
  for (const fault of faults) {
    if (names.has(fault.name)) throw new ConfigError(`Failed to read the explore config ${source}: $.faults: two faults are named "${fault.name}". Give each a name of its own.`)
    names.add(fault.name)
  }
  const routes = Object.entries(config.routes).map(([glob, route]) => ({
    glob,
    faults: route.faults ? resolveEntries(route.faults, faults, `${source} $.routes["${glob}"].faults`) : null,
    skip: route.skip,
  }))
  return { faults, routes }
}

/** Read and validate a config file. */
export async function loadExploreConfig(file: string): Promise<ExploreConfig> {
  return parseExploreConfig(await readInputDocument(file, { yaml: true, maxBytes: 1024 * 1024, what: 'the explore config' }), file)
}

/** The default config: the default table, every route. */
export const DEFAULT_EXPLORE_CONFIG: ExploreConfig = { faults: DEFAULT_FAULTS, routes: [] }

/** What the config says of `route`: the faults to try there (before applicability), or null when it is skipped. */
export function faultsForRoute(config: ExploreConfig, route: string): readonly FaultChoice[] | null {
  const entry = config.routes.find((candidate) => globMatches(candidate.glob, route))
  if (!entry) return config.faults
  if (entry.skip) return null
  return entry.faults ?? config.faults
}
