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
