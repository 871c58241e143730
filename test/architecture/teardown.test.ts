/**
 * One teardown for tests (#23): what a test makes it closes where it makes it (`closing()`,
 * `closingServer()`, `closingChild()`, `settingEnv()`, `onTestFinished`), and what a file's tests
 * share is a file-scoped fixture (test/helpers/file-fixtures.ts). A hand-written `afterEach` or
 * `afterAll` is allowed only in the files listed here, each with the reason a fixture would not
 * read better; a new one fails this test, and so does a listed file that no longer has one.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')

/** A `beforeAll` that records or computes once what every test reads (a run, a cassette, an agent script). */
const SHARED_RUN = 'its beforeAll records or computes once what every test then reads; the afterAll only removes what it made'

export const ALLOWED: Readonly<Record<string, string>> = {
  // Unit tests under src/: out of this change (src/ is not touched); each shares a temporary folder.
  'src/cassette/format/body-files.test.ts': 'unit test in src/, one temporary folder for the file',
  'src/cassette/format/cassette.test.ts': 'unit test in src/, one temporary folder for the file',
  'src/io/read-json-lines.test.ts': 'unit test in src/, one temporary folder for the file',
  'src/proxy/tls/certificate-authority.test.ts': 'unit test in src/, a fresh CA folder per test made in beforeEach',
  // Projects made from the packed tarball: they cannot import test/helpers.
  'test/packaging/projects/esm-suite/cassettes.spec.mjs': 'runs in a project made from the tarball, without test/helpers',
  'test/packaging/projects/esm-suite/concurrent.spec.mjs': 'runs in a project made from the tarball, without test/helpers',
  'test/packaging/install-tarball.test.ts': 'one npm pack and install for the whole file (minutes); its afterAll removes that project',
  'test/docs/docs-examples.test.ts': 'the tests are generated from the docs blocks; its afterAll also prints the count of blocks run',
  // One browser and one CLI process for the file, reached from page helpers.
  'test/ui/dashboard.test.ts': 'one Chromium and one CLI process for the file, reached from page helpers',
  'test/ui/dashboard-runs.test.ts': 'one Chromium and one CLI process with three runs of traffic for the file, reached from page helpers',
  'test/ui/lab.test.ts': 'one Chromium and one lab process for the file, reached from page helpers',
  'test/ui/shutdown-verdict.test.ts': 'one Chromium and one replay process for the file, reached from page helpers',
  'test/cli/stop-on-launcher-exit.test.ts': 'its beforeAll installs the package into a project with npm (seconds); helpers read that project',
  'test/proxy/malformed-requests.test.ts': 'two CLI proxy processes (reverse and forward) shared by the table-driven cases; starting them per case costs seconds each',
  'test/proxy/request-fuzz.test.ts': 'one CLI proxy process that every fuzzed request goes to, its stderr collected across the cases',
  'test/vitest/concurrent-storms.test.ts': 'its servers must start outside every test (the relay calls out from no test\'s task, what the file tests); a file fixture starts inside the first test',
  'test/vitest/matchers.test.ts': 'its cases use toolstorm\'s own vitest fixture (the API under test); the tool server is read by the module-level `ship` helper',
  'test/vitest/examples.test.ts': 'its cases use toolstorm\'s own vitest fixture (the API under test), written as a user would; the model and MCP servers stay plain set-up',
  'test/vitest/use-cassette.test.ts': 'its hooks also empty the cassettes folder beside the test (the fixture under test writes there) before and after the file; the agent helper reads the folder and upstream',
  'test/cli/http-proxy-clients.test.ts': 'its table of modes reads the upstream (flags, base URL) as each case runs; a fixture would be threaded through the table',
  'test/https/ca-cli.test.ts': 'its beforeAll makes a test CA and an HTTPS upstream it signed, read by the HTTPS cases; a fixture over dir would fit (not done yet: its cases name their own dir)',
  'test/https/record-replay.test.ts': SHARED_RUN,
  'test/cassette/cli.test.ts': 'its beforeAll writes the rules and the agent that recordAgent() (recorded once, read by several cases) and the cases run against its upstream',
  'test/cassette/agent-loop.test.ts': 'its beforeAll starts a model, a tool server that counts its calls and writes the agent, all read by the helpers env() and record() and by every case',
  'test/cassette/in-process-live.test.ts': 'its beforeAll records the agent once in-process, then takes the model down; agent() and every case read the tool server and its calls',
  'test/cassette/shutdown-verdict.test.ts': 'its beforeAll records the cassette every case replays; env() and replayed() read its folder and upstream (the sockets each case leaves open close with that case)',
  'test/cli/inspect-check.test.ts': SHARED_RUN,
}

/** Test files and test helpers: everything under test/, and the unit tests beside src/. */
function testFiles(): string[] {
  const files: string[] = []
  const walk = (dir: string, keep: (name: string) => boolean) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && !entry.name.startsWith('.')) walk(full, keep)
      } else if (keep(entry.name)) files.push(path.relative(ROOT, full).split(path.sep).join('/'))
    }
  }
  walk(path.join(ROOT, 'test'), (name) => /\.(ts|mts|mjs|js)$/.test(name))
  walk(path.join(ROOT, 'src'), (name) => name.endsWith('.test.ts'))
  return files.sort()
}

/** A call of a hand-written teardown hook at the start of a line (not in a comment or a string). */
const HOOK = new RegExp(`^\\s*(${['after', 'Each'].join('')}|${['after', 'All'].join('')})\\(`, 'm')

/** The files that call a hand-written teardown hook. */
export function filesWithTeardownHooks(): string[] {
  return testFiles().filter((file) => HOOK.test(readFileSync(path.join(ROOT, file), 'utf8')))
}

describe('one teardown for tests', () => {
  it('has a hand-written afterEach or afterAll only in the files allowed, each with its reason', () => {
    expect(filesWithTeardownHooks()).toEqual(Object.keys(ALLOWED).sort())
  })

  it('finds a hook call at the start of a line, and not one named in a comment', () => {
    expect(HOOK.test(`import { it } from 'vitest'\n${'after'}Each(async () => {\n  await proxy.close()\n})`)).toBe(true)
    expect(HOOK.test(`  ${'after'}All(() => server.close())`)).toBe(true)
    expect(HOOK.test(`/** no ${'after'}Each( here */\nconst x = 1`)).toBe(false)
  })
})
