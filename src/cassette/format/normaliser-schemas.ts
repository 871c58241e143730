/**
 * The normalisers a cassette's matching options name (`--normalize`, `--normalize-pattern`,
 * `--normalize-path`): apart from the cassette's schema, so the command line can check them
 * without loading it (`toolstorm mcp` starts without the cassette format).
 */
import { z } from 'zod'
import { JSON_PATH_SYNTAX, parseJsonPath } from './json-path.js'

/** Normalisers by name (src/cassette/format/normalisers.ts says what each replaces). */
export const NORMALISERS = ['ids', 'timestamps', 'uuids'] as const
export const normaliserSchema = z.enum(NORMALISERS, { error: `expected one of ${NORMALISERS.join(', ')}` })
export type Normaliser = z.infer<typeof normaliserSchema>

/** User normalisers one cassette may hold, of each kind. */
export const MAX_USER_NORMALISERS = 100

/** Why `source` cannot be a pattern normaliser, or null: a JavaScript regular expression that matches something. */
function patternProblem(source: string): string | null {
  try {
    return new RegExp(source).test('') ? 'it matches the empty string' : null
  } catch (error) {
    return (error as Error).message
  }
}

/** A regular expression (JavaScript syntax) whose matches replay treats as equal: `SHP-\d+`. */
export const normalisePatternSchema = z
  .string({ error: 'expected a regular expression' })
  .min(1, { error: 'expected a regular expression' })
  .max(1000, { error: 'expected a regular expression of at most 1000 characters' })
  .superRefine((source, context) => {
    const problem = patternProblem(source)
    if (problem) context.addIssue({ code: 'custom', message: `expected a regular expression that matches something (JavaScript syntax, such as SHP-\\d+), got /${source}/: ${problem}` })
  })

/** A JSON path whose values replay treats as equal: `$.messages[*].content`. */
export const normalisePathSchema = z
  .string({ error: 'expected a JSON path' })
  .max(1000, { error: 'expected a JSON path of at most 1000 characters' })
  .superRefine((path, context) => {
    const parsed = parseJsonPath(path)
    if (typeof parsed === 'string') context.addIssue({ code: 'custom', message: `expected a JSON path (${JSON_PATH_SYNTAX}, as "$.messages[*].content"), got ${JSON.stringify(path)}: ${parsed}` })
  })
