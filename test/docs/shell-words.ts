/**
 * The `toolstorm` command lines in a shell block (or a Compose/Kubernetes `command`), as argv
 * arrays, for the docs test to parse against the CLI. A small POSIX-ish word splitter, written
 * here because no dependency of ours splits shell words: quotes, backslash-newline, `#` comments,
 * `&&`/`||`/`;`/`|`/`&` between commands, redirections dropped, and `$VAR`, `${VAR}`, `$(…)`
 * standing for a value (`VALUE`): only the shape of a command line is checked, never its values.
 */
const OPERATORS = new Set(['&&', '||', ';', '|', '&'])

/** Split `text` into commands, each a list of words. */
export function shellCommands(text: string): string[][] {
  const commands: string[][] = [[]]
  let word: string | null = null
  const push = () => {
    if (word !== null) (commands.at(-1) as string[]).push(word)
    word = null
  }
  const source = text.replace(/\\\n/g, ' ')
  for (let i = 0; i < source.length; i++) {
    const ch = source[i] as string
    if (ch === '\n' || ch === ';' || ch === '|' || ch === '&') {
      push()
      if (ch === '&' && source[i + 1] === '&') i++
      else if (ch === '|' && source[i + 1] === '|') i++
      commands.push([])
    } else if (ch === ' ' || ch === '\t') push()
    else if (ch === '#' && word === null) {
      while (i + 1 < source.length && source[i + 1] !== '\n') i++
    } else if (ch === '>' || ch === '<') {
      // A redirection: its target is not an argument.
      push()
      while (source[i + 1] === '>' || source[i + 1] === '&') i++
      while (source[i + 1] === ' ') i++
      while (i + 1 < source.length && !/[\s;|&]/.test(source[i + 1] as string)) i++
    } else if (ch === "'") {
      const close = source.indexOf("'", i + 1)
      word = (word ?? '') + source.slice(i + 1, close)
      i = close
    } else if (ch === '"') {
      let j = i + 1
      let text = ''
      while (j < source.length && source[j] !== '"') {
        if (source[j] === '\\' && j + 1 < source.length) {
          text += source[j + 1]
          j += 2
        } else if (source[j] === '$') {
          const end = variableEnd(source, j)
          text += 'VALUE'
          j = end
        } else text += source[j++]
      }
      word = (word ?? '') + text
      i = j
    } else if (ch === '$') {
      const end = variableEnd(source, i)
      word = (word ?? '') + 'VALUE'
      i = end - 1
    } else word = (word ?? '') + ch
  }
  push()
  return commands.filter((command) => command.length > 0 && !OPERATORS.has(command[0] as string))
}

/** Where `$VAR`, `${VAR}` or `$(…)` starting at `start` ends. */
function variableEnd(source: string, start: number): number {
  const next = source[start + 1]
  if (next === '(' || next === '{') {
    const close = next === '(' ? ')' : '}'
    let depth = 0
    for (let j = start + 1; j < source.length; j++) {
      if (source[j] === next) depth++
      else if (source[j] === close && --depth === 0) return j + 1
    }
    return source.length
  }
  let j = start + 1
  while (j < source.length && /[A-Za-z0-9_]/.test(source[j] as string)) j++
  return j
}

/** The argv of each `toolstorm` (or `npx toolstorm`) command among `commands`, environment assignments skipped. */
export function toolstormArgvs(commands: readonly string[][]): string[][] {
  const found: string[][] = []
  for (const command of commands) {
    let words = command
    while (words.length && /^[A-Za-z_][A-Za-z0-9_]*=/.test(words[0] as string)) words = words.slice(1)
    if (words[0] === 'npx') words = words.slice(1)
    if (words[0] === 'toolstorm') found.push(words.slice(1))
  }
  return found
}
