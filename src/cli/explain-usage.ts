/** yargs' usage messages, completed with what the user probably meant. */
import { closestName } from '../engine/closest-name.js'

/** What yargs' instance knows at the failure: the options of the command being parsed (untyped in @types/yargs). */
export interface ParsingState {
  getOptions?(): { key?: Record<string, unknown> }
}

/** yargs' usage message, with the declared flag closest to each unknown one ("Did you mean --target?"). */
export function explainUsage(message: string, argv: readonly string[], state: ParsingState): string {
  if (message.startsWith('Did you mean ')) {
    const typed = argv.find((arg) => !arg.startsWith('-'))
    return `Unknown command "${typed}". ${message}`
  }
  const listed = /^Unknown arguments?: (.*)$/s.exec(message)?.[1]
  const closing = /[.?!]$/.test(message) ? message : `${message}.`
  if (listed === undefined) return closing
  // yargs lists `--admin-prot` twice, as typed and camel-cased: suggest once.
  const typed = listed.split(', ')
  const unknown = typed.filter((name) => !/[A-Z]/.test(name) || !typed.includes(name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)))
  const declared = Object.keys(state.getOptions?.().key ?? {})
  const hints = unknown.flatMap((name) => {
    const closest = closestName(name, declared)
    if (!closest) return []
    return [unknown.length === 1 ? `Did you mean --${closest}?` : `Did you mean --${closest} for ${name.length === 1 ? '-' : '--'}${name}?`]
  })
  return [closing, ...hints].join(' ')
}
