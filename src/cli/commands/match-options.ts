/**
 * How replay compares requests, as options: `--match-header`, `--ignore-query` and the body's
 * (`--ignore-body-field`, `--normalize`, `--normalize-pattern`, `--normalize-path`), shared by
 * `proxy --record`, `record`, `replay` and, the body's alone, `mcp`.
 */
import type { Argv } from 'yargs'
import type { z } from 'zod'
import type { MatchOptions } from '../../cassette/format/cassette-schema.js'
import { MAX_USER_NORMALISERS, NORMALISERS, normalisePathSchema, normalisePatternSchema, type Normaliser } from '../../cassette/format/normaliser-schemas.js'

/** How replay compares bodies (`toolstorm mcp` has no headers or query to compare). */
export interface BodyMatchArgs {
  'ignore-body-field': string[]
  /** `none`: no normaliser, not even the cassette header's (replay). */
  normalize: Normaliser[] | 'none'
  'normalize-pattern': string[]
  'normalize-path': string[]
}

export interface MatchArgs extends BodyMatchArgs {
  'match-header': string[]
  'ignore-query': string[]
}

/**
 * `--normalize ids,timestamps`: names, comma-separated or repeated; `none` alone turns them all
 * off (a replay then ignores the header's). A usage error (exit 2) names an unknown one.
 */
function parseNormalisers(value: unknown): Normaliser[] | 'none' {
  const names = (Array.isArray(value) ? value : [value]).flatMap((item) => String(item).split(',')).map((name) => name.trim()).filter((name) => name !== '')
  if (names.includes('none')) {
    if (names.some((name) => name !== 'none')) throw new Error(`--normalize: "none" turns every normaliser off and takes no other name, got ${JSON.stringify(names.join(','))}`)
    return 'none'
  }
  for (const name of names) if (!(NORMALISERS as readonly string[]).includes(name)) throw new Error(`--normalize: expected ${NORMALISERS.join(', ')} (comma-separated) or none, got ${JSON.stringify(name)}`)
  return [...new Set(names as Normaliser[])]
}

/** Each value of a repeatable user-normaliser flag, checked by the header's own schema: a usage error (exit 2) names the flag. */
function checkedWith(flag: string, schema: z.ZodType<string>) {
  return (value: unknown): string[] => {
    const values = (Array.isArray(value) ? value : [value]).map(String)
    if (values.length > MAX_USER_NORMALISERS) throw new Error(`--${flag}: at most ${MAX_USER_NORMALISERS}, got ${values.length}`)
    for (const item of values) {
      const checked = schema.safeParse(item)
      if (!checked.success) throw new Error(`--${flag}: ${checked.error.issues[0]?.message ?? 'invalid'}`)
    }
    return values
  }
}

/** `--match-header`, `--ignore-query`, and the body's options (bodyMatchOptions). */
export function matchOptions<T>(yargs: Argv<T>): Argv<T & MatchArgs> {
  return bodyMatchOptions(
    yargs
      .option('match-header', { type: 'string', array: true, default: [] as string[], describe: 'Request header replay compares too (repeatable)' })
      .option('ignore-query', { type: 'string', array: true, default: [] as string[], describe: 'Query parameter replay ignores (repeatable)' }),
  ) as unknown as Argv<T & MatchArgs>
}

/** `--ignore-body-field`, `--normalize`, `--normalize-pattern`, `--normalize-path`. */
export function bodyMatchOptions<T>(yargs: Argv<T>): Argv<T & BodyMatchArgs> {
  return yargs
    .option('ignore-body-field', { type: 'string', array: true, default: [] as string[], describe: 'Body field replay ignores: a JSON key at any depth, or a form field (repeatable)' })
    .option('normalize', { type: 'string', array: true, default: [] as string[], coerce: parseNormalisers, describe: `Values replay treats as equal in model and MCP tool calls: ${NORMALISERS.join(', ')} (comma-separated; kept in the cassette header), or none (replay: not even the header's, the patterns and paths too)` })
    .option('normalize-pattern', { type: 'string', array: true, default: [] as string[], coerce: checkedWith('normalize-pattern', normalisePatternSchema), describe: "Regular expression whose matches replay treats as equal anywhere in a request body, as 'SHP-\\d+' (repeatable; kept in the cassette header; on replay, instead of the header's)" })
    .option('normalize-path', { type: 'string', array: true, default: [] as string[], coerce: checkedWith('normalize-path', normalisePathSchema), describe: "JSON path whose values replay treats as equal in a JSON request body, as '$.messages[*].content' (repeatable; kept in the cassette header; on replay, instead of the header's)" }) as unknown as Argv<T & BodyMatchArgs>
}

/** Matching options given on the command line (empty lists mean "as recorded"). */
export function matchFromArgs(args: BodyMatchArgs & Partial<MatchArgs>): Partial<MatchOptions> {
  return {
    ...(args['match-header']?.length ? { headers: args['match-header'].map(String) } : {}),
    ...(args['ignore-query']?.length ? { ignoreQuery: args['ignore-query'].map(String) } : {}),
    ...(args['ignore-body-field'].length ? { ignoreBodyFields: args['ignore-body-field'].map(String) } : {}),
    ...(args.normalize === 'none' ? { normalize: [], normalizePatterns: [], normalizePaths: [] } : args.normalize.length ? { normalize: args.normalize } : {}),
    ...(args['normalize-pattern'].length ? { normalizePatterns: args['normalize-pattern'] } : {}),
    ...(args['normalize-path'].length ? { normalizePaths: args['normalize-path'] } : {}),
  }
}
