/**
 * Every stdlib `http.server` handler in this repository turns Nagle's algorithm off (#42). Such a
 * handler writes a response's head and body in two writes; on a kept-alive connection the body then
 * waits for the client's delayed ACK, ~40 ms per request, which made the Python tests and the
 * fixture benchmark measure a stall instead of the proxy (docs/python.md#stdlib-httpserver-tool-servers).
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const FOLDERS = ['python', 'fixtures', 'test', 'bench', 'examples']
const SKIP = new Set(['node_modules', 'dist', '.venv', '__pycache__', 'build'])
const HANDLER = /^(\s*)class\s+(\w+)\s*\(\s*(?:http\.server\.)?(?:BaseHTTPRequestHandler|SimpleHTTPRequestHandler)\s*\)\s*:/

function pythonFiles(dir: string): string[] {
  let entries
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return []
  }
  return entries.flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return SKIP.has(entry.name) ? [] : pythonFiles(full)
    return entry.isFile() && entry.name.endsWith('.py') ? [full] : []
  })
}

/** Each handler class in `text` as its name and whether its own body sets `disable_nagle_algorithm = True`. */
export function handlers(text: string): { name: string; noDelay: boolean }[] {
  const lines = text.split('\n')
  const found: { name: string; noDelay: boolean }[] = []
  lines.forEach((line, at) => {
    const match = HANDLER.exec(line)
    if (!match) return
    const indent = match[1]!.length
    let noDelay = false
    for (const inner of lines.slice(at + 1)) {
      if (inner.trim() === '' || inner.trimStart().startsWith('#')) continue
      if (inner.length - inner.trimStart().length <= indent) break
      if (/^\s*disable_nagle_algorithm\s*=\s*True\b/.test(inner)) noDelay = true
    }
    found.push({ name: match[2]!, noDelay })
  })
  return found
}

describe("the repository's stdlib http.server handlers", () => {
  const all = FOLDERS.flatMap((folder) => pythonFiles(path.join(ROOT, folder))).flatMap((file) =>
    handlers(readFileSync(file, 'utf8')).map((handler) => ({ ...handler, file: path.relative(ROOT, file) })),
  )

  it('are found (the scan is not empty)', () => {
    // python/tests, python/bench, fixtures/explore, fixtures/python-tool-server, test/packaging at least
    expect(all.length).toBeGreaterThanOrEqual(9)
  })

  it('all set disable_nagle_algorithm = True', () => {
    expect(all.filter((handler) => !handler.noDelay).map((handler) => `${handler.file}: ${handler.name}`)).toEqual([])
  })

  it('reads a class body only: a later class or a module-level line does not count', () => {
    const text = [
      'class A(BaseHTTPRequestHandler):',
      '    protocol_version = "HTTP/1.1"',
      '',
      'class B(http.server.BaseHTTPRequestHandler):',
      '    # disable_nagle_algorithm = True',
      '    disable_nagle_algorithm = True',
      'disable_nagle_algorithm = True',
      '    def f(self):',
      '        class C(BaseHTTPRequestHandler):',
      '            disable_nagle_algorithm = False',
    ].join('\n')
    expect(handlers(text)).toEqual([
      { name: 'A', noDelay: false },
      { name: 'B', noDelay: true },
      { name: 'C', noDelay: false },
    ])
  })
})
