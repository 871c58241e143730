/**
 * A folder's import graph, read from its sources (static `import`/`export … from` and dynamic
 * `import()`, type-only imports included: they tie files together for a reader just the same),
 * and the checks the architecture tests run on it.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

const IMPORT = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g

/** The non-test TypeScript files under `dir`. */
export function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name))
}

/** The relative imports of `file`, resolved to absolute `.ts` paths. */
export function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const found: string[] = []
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2]
    if (spec?.startsWith('.')) found.push(path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts'))
  }
  return found
}

/** Each file cycle once, as the files on it relative to `root` (Tarjan's strongly connected components). */
export function fileCycles(graph: ReadonlyMap<string, readonly string[]>, root: string): string[][] {
  let next = 0
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const cycles: string[][] = []
  const visit = (file: string) => {
    index.set(file, next)
    low.set(file, next++)
    stack.push(file)
    onStack.add(file)
    for (const to of graph.get(file) ?? []) {
      if (!graph.has(to)) continue
      if (!index.has(to)) {
        visit(to)
        low.set(file, Math.min(low.get(file)!, low.get(to)!))
      } else if (onStack.has(to)) low.set(file, Math.min(low.get(file)!, index.get(to)!))
    }
    if (low.get(file) !== index.get(file)) return
    const component: string[] = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(path.relative(root, member))
    } while (member !== file)
    if (component.length > 1 || (graph.get(file) ?? []).includes(file)) cycles.push(component)
  }
  for (const file of graph.keys()) if (!index.has(file)) visit(file)
  return cycles
}

/**
 * `file`'s code with its comments left out and its string, template and regex literals emptied:
 * what it does, not what it says. A lexer of a few lines, enough for these checks: a `/` is a regex
 * after an operator or at the start, and a template's `${…}` counts as its text.
 */
export function codeOf(file: string): string {
  return codeOfText(readFileSync(file, 'utf8'))
}

/** `codeOf` for source text. */
export function codeOfText(text: string): string {
  let out = ''
  let last = ''
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (c === '/' && text[i + 1] === '/') {
      i = text.indexOf('\n', i)
      if (i === -1) break
      continue
    }
    if (c === '/' && text[i + 1] === '*') {
      i = text.indexOf('*/', i + 2) + 2
      if (i === 1) break
      continue
    }
    const regex = c === '/' && (last === '' || '(,=:[!&|?{};+-*%<>~^'.includes(last) || /\breturn\s*$/.test(out))
    if (c === "'" || c === '"' || c === '`' || regex) {
      let inClass = false
      let braces = 0
      for (i++; i < text.length; i++) {
        const d = text[i]!
        if (d === '\\') i++
        else if (c === '`' && d === '$' && text[i + 1] === '{') braces++
        else if (c === '`' && braces > 0 && d === '}') braces--
        else if (regex && (d === '[' || d === ']')) inClass = d === '['
        else if (d === c && !inClass && braces === 0) break
        else if (c !== '`' && d === '\n') break
      }
      i++
      out += regex ? '/_/' : c + c
      last = c
      continue
    }
    out += c
    if (!/\s/.test(c)) last = c
    i++
  }
  return out
}

/**
 * The calls of `name` in `code` (its declaration `function name(` left out), each as its
 * top-level arguments' text: enough to tell how a function is called without a parser.
 */
export function callsOf(code: string, name: string): string[][] {
  const calls: string[][] = []
  for (const match of code.matchAll(new RegExp(`(?<![\\w.$])(function\\s+)?${name}\\(`, 'g'))) {
    if (match[1]) continue
    const args: string[] = []
    let depth = 0
    let current = ''
    for (const char of code.slice(match.index + match[0].length)) {
      if (depth === 0 && char === ')') break
      if (depth === 0 && char === ',') {
        args.push(current.trim())
        current = ''
        continue
      }
      if ('([{'.includes(char)) depth++
      if (')]}'.includes(char)) depth--
      current += char
    }
    if (current.trim()) args.push(current.trim())
    calls.push(args)
  }
  return calls
}
