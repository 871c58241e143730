/**
 * `useCassette(name)` in the fixture, in a real vitest run: recorded on the first run (paths only,
 * next to the test), replayed strictly after (the upstream sees nothing; a diverged request fails
 * the test with the table of expected vs seen), re-recorded with vitest's `-u`.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { ROOT } from '../helpers/cli.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'

const FIXTURE = path.join(ROOT, 'fixtures/vitest-cassette')
const CASSETTES = path.join(FIXTURE, '__cassettes__')

let dir: string
let upstream: Upstream
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-use-cassette-'))
  upstream = await startUpstream()
  await rm(CASSETTES, { recursive: true, force: true })
})
afterAll(async () => {
  await upstream.close()
  await rm(dir, { recursive: true, force: true })
  await rm(CASSETTES, { recursive: true, force: true })
})

interface Result {
  title: string
  status: string
  failureMessages: string[]
}

let runs = 0
/** One run of the fixture's spec; its results by test title. */
async function runSpec(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; stdout: string; results: Record<string, Result> }> {
  const output = path.join(dir, `report-${++runs}.json`)
  let stdout = ''
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'fixtures/vitest-cassette/vitest.config.ts', '--reporter=json', `--outputFile=${output}`, ...args], {
      cwd: ROOT,
      // CI=1 would make vitest refuse new snapshots (and so new cassettes): this test asks for them.
      env: { ...process.env, CI: '', GITHUB_ACTIONS: '', TOOLSTORM_TEST_UPSTREAM: upstream.url, ...env },
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.on('close', resolve)
  })
  const report = JSON.parse(await readFile(output, 'utf8')) as { testResults: Array<{ assertionResults: Result[] }> }
  return { code, stdout, results: Object.fromEntries(report.testResults[0]!.assertionResults.map((r) => [r.title, r])) }
}

const READ = 'a read replays from its cassette'
const SHIP = 'a shipment replays only while the order is the recorded one'
const MISSING = 'a cassette that must replay but was never recorded is an error naming its file'
const ANY_ORDER = 'a shipment whose order id a pattern normalises replays whatever the order'
const MALFORMED = 'a malformed normaliser is refused naming the option'

describe('useCassette in the vitest fixture', { timeout: 120_000 }, () => {
  it('records on the first run, replays strictly after with the table in a failure, and re-records with -u', async () => {
    const first = await runSpec({})
    expect(first.code).toBe(0)
    expect(first.results[MISSING]?.status).toBe('passed')
    expect(first.results[MALFORMED]?.status).toBe('passed')
    expect(upstream.requests.map((r) => r.url)).toEqual(['/items/a', '/ship', '/ship'])
    const anyOrder = await Cassette.load(path.join(CASSETTES, 'use-cassette.spec.ts', 'ship-any-order.cassette.jsonl'))
    expect(anyOrder.header.match.normalizePatterns).toEqual(['o-\\d+'])
    const ship = path.join(CASSETTES, 'use-cassette.spec.ts', 'ship.cassette.jsonl')
    const recorded = await Cassette.load(ship)
    expect(recorded.exchanges.map((e) => [e.request.method, e.request.url, e.response?.status])).toEqual([['POST', '/ship', 201]])

    // The agent changed: the read still replays, the shipment fails at once with the table, and nothing reached the upstream.
    const diverged = await runSpec({ TOOLSTORM_TEST_ORDER: 'o-2' })
    expect(diverged.code).toBe(1)
    expect(diverged.results[READ]?.status).toBe('passed')
    expect(diverged.results[SHIP]?.status).toBe('failed')
    // The user's pattern, kept in its cassette's header, makes the other order id compare equal.
    expect(diverged.results[ANY_ORDER]?.status).toBe('passed')
    const failure = diverged.results[SHIP]?.failureMessages.join('\n') ?? ''
    expect(failure).toContain('CassetteMismatchError: Failed to replay "POST')
    expect(failure).toMatch(/req\s+#\s+expected\s+seen\s+result/)
    expect(failure).toContain('"o-1" ≠ "o-2"')
    expect(upstream.requests).toHaveLength(3)

    // -u (vitest's --update) records both again.
    const updated = await runSpec({ TOOLSTORM_TEST_ORDER: 'o-2' }, ['-u'])
    expect(updated.code).toBe(0)
    expect(upstream.requests.map((r) => r.url)).toEqual(['/items/a', '/ship', '/ship', '/items/a', '/ship', '/ship'])
    expect((await Cassette.load(ship)).exchanges[0]!.request.body?.data).toContain('"order":"o-2"')
  })
})
