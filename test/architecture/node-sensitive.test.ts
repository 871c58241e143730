/**
 * The list of Node-sensitive test files (test/node-sensitive.ts) that CI's second Node line runs
 * holds what it must: a stale entry, or a test that reaches Node's internals without being listed
 * (so it would run on Node 20 alone), fails here.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { NODE_SENSITIVE } from '../node-sensitive.js'

const ROOT = path.resolve(import.meta.dirname, '../..')

/** What makes a test file Node-sensitive when it imports it directly. */
const SENSITIVE_IMPORT = /from\s+['"](?:@mswjs\/interceptors[^'"]*|msw\/node|node:tls|node:http2|[^'"]*\/src\/proxy\/(?:http1|tls)\/[^'"]*|[^'"]*\/src\/interceptors\/[^'"]*)['"]|internalBinding|\bHTTPParser\b/

const testFiles = readdirSync(path.join(ROOT, 'test'), { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
  .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))

const listed = (file: string) => NODE_SENSITIVE.some((pattern) => path.matchesGlob(file, pattern))

describe('the Node-sensitive test list', () => {
  it('names only files that exist (each entry matches at least one test file)', () => {
    expect(NODE_SENSITIVE.filter((pattern) => !testFiles.some((file) => path.matchesGlob(file, pattern)))).toEqual([])
  })

  it('holds every test file that imports Node internals, TLS, MSW or the data plane\'s HTTP/1.1 server directly', () => {
    // The architecture tests read sources as text; they are not run for what they import.
    const reaching = testFiles.filter((file) => !file.startsWith('test/architecture/') && SENSITIVE_IMPORT.test(readFileSync(path.join(ROOT, file), 'utf8')))
    expect(reaching.length).toBeGreaterThan(10)
    expect(reaching.filter((file) => !listed(file))).toEqual([])
  })

  it('leaves most of the suite to one Node line', () => {
    const count = testFiles.filter(listed).length
    expect(count).toBeLessThan(testFiles.length / 2)
  })
})
