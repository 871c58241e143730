/**
 * `toolstorm check --json` names the effects committed twice, as the text output does (issue #22,
 * item 4): `duplicates` with each effect's name, key, count and calls.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { createStorm } from '../../src/create-storm.js'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'

/** A run whose retried write committed the same shipment twice, and whose read committed once. */
function reportWithDuplicate(run: string) {
  const storm = createStorm({})
  for (const [path, key] of [['/ship', 'order-7'], ['/ship', 'order-7'], ['/read', 'order-8']] as const) {
    const exchange = storm.begin({ method: 'POST', url: new URL(`http://t.test${path}`), headers: { 'x-toolstorm-run': run } })
    exchange.markExecuted()
    storm.effect('shipment', key, { call: exchange.id })
    exchange.finish('response', 201)
  }
  return storm.report(run)
}

describe('toolstorm check --json', () => {
  it('lists the effects committed twice', async ({ dir }) => {
    const file = path.join(dir, 'report.json')
    await writeFile(file, JSON.stringify(reportWithDuplicate('default')))
    const result = await runCli(['check', file, '--json'])
    expect(result.code).toBe(1)
    const json = JSON.parse(result.stdout)
    expect(json.passed).toBe(false)
    expect(json.checks.find((check: { name: string }) => check.name === 'No duplicate side effects')).toMatchObject({ passed: false })
    expect(json.duplicates).toEqual([{ name: 'shipment', key: 'order-7', count: 2, calls: [1, 2] }])
  })

  it('lists them per run for a file of several runs, and an empty list where there are none', async ({ dir }) => {
    const file = path.join(dir, 'runs.json')
    const clean = createStorm({}).report('clean')
    await writeFile(file, JSON.stringify({ version: 1, kind: 'toolstorm.report-set', toolstorm: '0.1.0', runs: [{ run: 'a', report: reportWithDuplicate('a') }, { run: 'clean', report: clean }] }))
    const result = await runCli(['check', file, '--json'])
    const json = JSON.parse(result.stdout)
    expect(json.runs.map((run: { duplicates: unknown[] }) => run.duplicates)).toEqual([[{ name: 'shipment', key: 'order-7', count: 2, calls: [1, 2] }], []])
  })
})
