/**
 * Test groups that need Chromium, redis-server or the Python venv skip where it is missing (outside
 * CI), and the run says so in one line at its end, never silently (#36 item 13); nothing is said
 * when they ran. A small vitest project (fixtures/vitest-skipped-groups) runs with each requirement
 * pointed at a path that exists or not.
 */
import { execFile, execFileSync } from 'node:child_process'
import path from 'node:path'
import { promisify, stripVTControlCharacters } from 'node:util'
import { expect, it } from 'vitest'
import { ROOT } from '../helpers/cli.js'

const run = promisify(execFile)

async function runFixture(env: Record<string, string>): Promise<string> {
  const { CI: _ci, ...inherited } = process.env
  const { stdout } = await run(process.execPath, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'fixtures/vitest-skipped-groups/vitest.config.ts'], { cwd: ROOT, env: { ...inherited, ...env }, timeout: 60_000 })
  // Without colours, for the assertions.
  return stripVTControlCharacters(stdout)
}

const MISSING = { TOOLSTORM_CHROMIUM: '/nonexistent/chromium', TOOLSTORM_REDIS_SERVER: '/nonexistent/redis-server', TOOLSTORM_PYTHON: '/nonexistent/python' }

it('names each group skipped for something missing, and what to install, in one line at the end', async () => {
  const output = await runFixture(MISSING)
  expect(output).toMatch(/Tests {2}3 skipped/)
  const lines = output.split('\n').filter((line) => line.startsWith('[toolstorm tests]'))
  expect(lines).toEqual([
    '[toolstorm tests] skipped: the browser tests (no Chromium at /nonexistent/chromium: apt-get install chromium); the Redis (shared state) tests (no redis-server at /nonexistent/redis-server: apt-get install redis-server); the tests with Python clients (no test venv at /nonexistent/python: bash .ci/python-venv.sh). Install what is missing, or set CI=1 to make them fail instead.',
  ])
  expect(output.trimEnd().endsWith(lines[0] as string)).toBe(true)
})

it('says nothing when every group ran, nor in CI where a missing requirement fails instead', async () => {
  // Files that exist stand for Chromium and redis-server (the fixture only checks they are there); the system Python imports json.
  const python3 = execFileSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).trim()
  const present = await runFixture({ TOOLSTORM_CHROMIUM: process.execPath, TOOLSTORM_REDIS_SERVER: process.execPath, TOOLSTORM_PYTHON: python3 })
  expect(present).toMatch(/Tests {2}3 passed/)
  expect(present).not.toContain('[toolstorm tests]')
  const ci = await runFixture({ ...MISSING, CI: '1' })
  expect(ci).not.toContain('[toolstorm tests]')
})
