import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../helpers/cli.js'

describe('toolstorm/vitest fixture', () => {
  it('fails a test at teardown when a configured rule never triggered, and only then', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-fixture-'))
    const output = path.join(dir, 'report.json')
    try {
      const code = await new Promise<number | null>((resolve) => {
        const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'fixtures/vitest-fixture/vitest.config.ts', '--reporter=json', `--outputFile=${output}`], {
          cwd: ROOT,
          stdio: 'ignore',
        })
        child.on('close', resolve)
      })
      expect(code).toBe(1)
      const report = JSON.parse(await readFile(output, 'utf8')) as { testResults: Array<{ assertionResults: Array<{ title: string; status: string; failureMessages: string[] }> }> }
      const results = Object.fromEntries(report.testResults[0]!.assertionResults.map((r) => [r.title, r]))
      expect(results['recovers from a one-time timeout']?.status).toBe('passed')
      expect(results['a probabilistic campaign opts out of the trigger check']?.status).toBe('passed')
      expect(results['each test gets an isolated storm']?.status).toBe('passed')
      expect(results['a rule on a misspelled route never triggers']?.status).toBe('failed')
      expect(results['a rule on a misspelled route never triggers']?.failureMessages.join('\n')).toContain('Fault exercised: typo: Triggered 0 time(s)')
      // Each failure is recorded once (vitest recorded an error thrown from a fixture's teardown twice).
      expect(results['a rule on a misspelled route never triggers']?.failureMessages).toHaveLength(1)
      const unreached = results['rules configured, but the client has its own transport']
      expect(unreached?.status).toBe('failed')
      expect(unreached?.failureMessages.join('\n')).toContain('toolstorm: no request reached the storm, so its rule(s) "busy" could not trigger. Likely causes:\n  - the client was created before storm() was called')
      expect(unreached?.failureMessages.join('\n')).toContain("its own transport, which in-process interception does not see (undici's request")
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
