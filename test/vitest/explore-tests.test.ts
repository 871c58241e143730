/**
 * `exploreTests()` of toolstorm/vitest: a suite of one case per variation, the search run while
 * vitest collects the file. The suite (fixtures/vitest-explore) runs in a vitest of its own, with
 * the JSON reporter; its cases must be the variations, with their verdicts.
 */
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../helpers/cli.js'
import { hasPythonModules } from '../helpers/python.js'
import { temporaryFolder } from '../helpers/teardown.js'

interface Report {
  testResults: Array<{ assertionResults: Array<{ title: string; status: string; failureMessages: string[] }> }>
}

describe.skipIf(!hasPythonModules('json'))('toolstorm/vitest exploreTests()', { timeout: 240_000 }, () => {
  it('reports each variation as a case: failures fail with their checks and rerun, passes pass, a fault that never fired is skipped', async () => {
    const output = path.join(await temporaryFolder('toolstorm-vitest-explore-'), 'report.json')
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'fixtures/vitest-explore/vitest.config.ts', '--reporter=json', `--outputFile=${output}`], { cwd: ROOT, stdio: 'ignore' })
      child.on('close', resolve)
    })
    expect(code).toBe(1)
    const report = JSON.parse(await readFile(output, 'utf8')) as Report
    const cases = report.testResults.flatMap((file) => file.assertionResults).map((result) => ({ title: result.title.replace(/ \[[0-9a-f-]+\].*/, ''), status: result.status, message: result.failureMessages[0] ?? '' }))
    const byTitle = Object.fromEntries(cases.map((entry) => [entry.title, entry]))
    // The writes' faults (a model call is no write: no response_lost there).
    expect(Object.keys(byTitle).sort()).toEqual(['response_lost on POST /events #1', 'response_lost on POST /shipments #1', 'schema_drift on POST /events #1', 'schema_drift on POST /shipments #1', 'schema_drift on POST /v1/chat/completions #1', 'timeout on POST /events #1', 'timeout on POST /shipments #1', 'timeout on POST /v1/chat/completions #1'])
    expect(byTitle['response_lost on POST /shipments #1']).toMatchObject({ status: 'failed' })
    expect(byTitle['response_lost on POST /shipments #1']!.message).toContain('No duplicate side effects: 1 duplicate effect(s) across 2 commits')
    expect(byTitle['response_lost on POST /shipments #1']!.message).toMatch(/rerun: toolstorm explore --only [0-9a-f]{8} -- /)
    expect(byTitle['timeout on POST /shipments #1']).toMatchObject({ status: 'passed' })
    expect(byTitle['timeout on POST /v1/chat/completions #1']).toMatchObject({ status: 'failed' })
    expect(byTitle['schema_drift on POST /events #1']).toMatchObject({ status: 'skipped' })
  })
})
