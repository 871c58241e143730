/**
 * The JS options objects (`startProxy()`, `intercept()`, `stormHandlers()`, …) checked as the CLI
 * checks its flags: an unknown key is refused with a did-you-mean, a wrong value names the field
 * and what was expected. One zod schema per options object is the source of truth; `optionsSchema`
 * ties it to the options interface, so a field added to one and not the other does not compile.
 *
 * Checked once per call, never per request. Functions and class instances (observers, storms,
 * clocks, dispatchers) pass through as they are: the parsed copy is thrown away.
 */
import { z } from 'zod'
import { docsUrl } from '../docs-url.js'
import { ConfigError } from '../errors.js'
import { closestName } from '../engine/closest-name.js'

/** One schema per field of `T`, every field present and no other (the options interface is the type, this is the check). */
export type OptionsShape<T> = { [K in keyof T]-?: z.ZodType<T[K] | undefined> }

/** A strict schema for the options object `T`: every field optional, an unknown key an error. */
export function optionsSchema<T>(shape: OptionsShape<T>): z.ZodType<T> {
  const fields = Object.entries(shape as Record<string, z.ZodType>).map(([key, field]) => [key, field.optional()])
  return z.strictObject(Object.fromEntries(fields) as z.ZodRawShape) as unknown as z.ZodType<T>
}

/** A function (a hook, a filter, a reporter); its signature is the interface's to state. */
export function fn<T>(): z.ZodType<T> {
  return z.custom<T>((value) => typeof value === 'function', { error: 'expected a function' })
}

/** An object the caller made (a storm, a clock, an observer, a dispatcher): it passes through unchecked beyond being one. */
export function object<T>(what: string): z.ZodType<T> {
  return z.custom<T>((value) => typeof value === 'object' && value !== null, { error: `expected ${what}` })
}

/**
 * Throw a `ConfigError` (ERR_CONFIG_INVALID) naming `caller`, the field and what was expected, when
 * `options` does not fit `schema`. `options` itself is what the caller then uses.
 */
export function checkOptions<T>(caller: string, schema: z.ZodType<T>, options: unknown): void {
  if (options === undefined) return
  const result = schema.safeParse(options)
  if (result.success) return
  const known = 'shape' in schema ? Object.keys((schema as unknown as z.ZodObject).shape) : []
  const lines = result.error.issues.slice(0, 10).map((issue) => describe(issue, known))
  throw new ConfigError(`Failed to call ${caller}: ${lines[0]}${lines.length > 1 ? ` (and ${lines.length - 1} more)` : ''}. See ${docsUrl('api.md')}.`, {
    details: lines.join('\n'),
  })
}

function describe(issue: z.core.$ZodIssue, known: readonly string[]): string {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys
      .map((key) => {
        const closest = closestName(key, known)
        return `unknown option "${key}"${closest ? ` (did you mean "${closest}"?)` : ''}`
      })
      .join(', ')
  }
  if (issue.path.length === 0) return `expected an options object, ${issue.message.replace(/^Invalid input: /, '').replace(/^expected \w+, /, '')}`
  const field = issue.path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`)).join('')
  return `option "${field}": ${issue.message.replace(/^Invalid input: /, '')}`
}
