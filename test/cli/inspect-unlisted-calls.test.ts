/**
 * `toolstorm inspect` counts every call of a run, those past the 10,000 a report lists included,
 * as `inspect --runs` does. Before, a run of 10,001 calls read "10000 calls" (its listed ones)
 * in `inspect` and `inspect --json` while `inspect --runs` said 10001.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { VirtualClock } from '../../src/engine/clock.js'
import { createStorm } from '../../src/engine/storm.js'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'

describe('toolstorm inspect on a run past the 10,000 calls a report lists', { timeout: 60_000 }, () => {
  it('counts every call in text and JSON, and says which counts cover the listed calls only', async ({ dir }) => {
    const storm = createStorm({}, { clock: new VirtualClock() })
    for (let i = 0; i < 10_001; i++) storm.begin({ method: 'GET', url: new URL(`http://tools.test/items/${i}`), headers: {} }).finish('response', 200)
    const report = storm.report()
    expect([report.calls.length, report.droppedCalls]).toEqual([10_000, 1])
    const file = path.join(dir, 'long.json')
    await writeFile(file, JSON.stringify(report))

    const text = await runCli(['inspect', file])
    expect(text.code).toBe(0)
    expect(text.stdout).toContain('Valid report v1 (run default): 10001 calls, 0 effects\n  1 call(s) past the 10,000 a report lists were not itemized: the counts below cover the 10000 listed\n')
    expect(JSON.parse((await runCli(['inspect', file, '--json'])).stdout)).toMatchObject({ calls: 10_001, droppedCalls: 1 })
    expect(JSON.parse((await runCli(['inspect', file, '--runs', '--json'])).stdout)).toMatchObject({ runs: [{ calls: 10_001 }] })
  })
})
