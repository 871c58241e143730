/**
 * Case-sensitive shell globs over route names, as Python's `fnmatch.fnmatchcase`:
 * `*` (any run, `/` and `.` included), `?` (one character), `[seq]` and `[!seq]`.
 * The glob must match the whole name.
 */

const cache = new Map<string, RegExp>()

/** Compile a glob to an anchored RegExp (cached). */
export function compileGlob(pattern: string): RegExp {
  let compiled = cache.get(pattern)
  if (compiled) return compiled
  let source = ''
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string
    if (ch === '*') {
      source += '[\\s\\S]*'
    } else if (ch === '?') {
      source += '[\\s\\S]'
    } else if (ch === '[') {
      const close = findClassEnd(pattern, i)
      if (close === -1) {
        source += '\\['
      } else {
        let body = pattern.slice(i + 1, close)
        let negate = false
        if (body.startsWith('!')) {
          negate = true
          body = body.slice(1)
        }
        source += (negate ? '[^' : '[') + body.replace(/[\\\]^]/g, '\\$&') + ']'
        i = close
      }
    } else {
      source += ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    }
  }
  compiled = new RegExp(`^(?:${source})$`, 'u')
  if (cache.size > 1000) cache.clear()
  cache.set(pattern, compiled)
  return compiled
}

// fnmatch treats "]" right after "[" or "[!" as a literal member of the class.
function findClassEnd(pattern: string, open: number): number {
  let j = open + 1
  if (pattern[j] === '!') j++
  if (pattern[j] === ']') j++
  while (j < pattern.length && pattern[j] !== ']') j++
  return j < pattern.length ? j : -1
}

/** Whether `name` matches `pattern` as a whole. */
export function globMatches(pattern: string, name: string): boolean {
  return compileGlob(pattern).test(name)
}

/** Whether a pattern has glob metacharacters (a plain name matches only itself). */
export function isGlob(pattern: string): boolean {
  return /[*?[]/.test(pattern)
}
