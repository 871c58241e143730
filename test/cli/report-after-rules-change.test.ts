/**
 * A report stays readable after the rules changed mid-run (issue #22, item 2): a test suite that
 * sets rules per test through `PUT /rules` gets a shutdown `--report` that `check` and `inspect`
 * validate, with every rule a call was decided by, and each rule's coverage counted over the
 * calls made while it was in force.
 */
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import type { Report } from '../../src/engine/schema/report.js'
import { runCli } from '../helpers/cli.js'
import { servedUrl, startCli } from '../ui/spawn-cli.js'
import { test as it } from '../helpers/file-fixtures.js'

const MODEL_429 = { name: 'model-429', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 1 }
const SHIP_503 = { name: 'ship-503', route: 'POST /ship', kind: 'unavailable', calls: [1] }
/** No `calls`: eligible for every call on its route while it is in force. */
const EVERY_ITEM = { name: 'every-item', route: 'GET /items/*', kind: 'unavailable' }

describe('the shutdown report after PUT /rules mid-run', () => {
  it('keeps every rule a call was decided by, so check and inspect validate it', async ({ dir, upstream }) => {
    const rules = path.join(dir, 'rules.json')
    const report = path.join(dir, 'report.json')
    await writeFile(rules, JSON.stringify({ seed: 1, rules: [MODEL_429] }))
    const proxy = await startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--rules', rules, '--report', report, '--print-admin-token'], 2)
    const url = servedUrl(proxy)
    const admin = /· admin (\S+)$/.exec(proxy.lines[0] as string)?.[1] as string
    const token = /^admin token: (\S+)/.exec(proxy.lines[1] as string)?.[1] as string
    const putRules = async (body: unknown) => {
      const response = await fetch(`${admin}/rules`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
      expect(response.status).toBe(200)
    }
    const statuses: number[] = []
    const send = async (pathname: string, method = 'GET') => statuses.push((await fetch(`${url}${pathname}`, { method, ...(method === 'POST' ? { body: '{"order":"o-1"}' } : {}) })).status)
    try {
      // Test 1 under the rules the proxy started with, tests 2 and 3 under rules set through the admin API.
      await send('/items/a')
      await send('/items/b')
      await putRules({ seed: 1, rules: [SHIP_503, EVERY_ITEM] })
      await send('/ship', 'POST')
      await send('/items/c')
      await putRules({ seed: 1, rules: [MODEL_429] })
      await send('/items/d')
    } finally {
      expect(await proxy.stop()).toBe(0)
    }
    expect(statuses).toEqual([429, 429, 503, 503, 429])

    const saved = JSON.parse(await readFile(report, 'utf8')) as Report
    expect(saved.calls.map((call) => [call.route, call.fault])).toEqual([
      ['GET /items/a', 'model-429'],
      ['GET /items/b', 'model-429'],
      ['POST /ship', 'ship-503'],
      ['GET /items/c', 'every-item'],
      ['GET /items/d', 'model-429'],
    ])
    expect(saved.earlierRules?.map((set) => [set.from, set.to, set.rules.map((rule) => rule.name)])).toEqual([
      [1, 2, ['model-429']],
      [3, 4, ['ship-503', 'every-item']],
    ])
    // every-item was eligible for /items/c only: /items/a and /items/b came before it.
    expect(saved.coverage).toEqual({
      'model-429': { eligible: 3, selected: 3, triggered: 3 },
      'ship-503': { eligible: 1, selected: 1, triggered: 1 },
      'every-item': { eligible: 1, selected: 1, triggered: 1 },
    })
    const check = await runCli(['check', report])
    expect(check.stderr).toBe('')
    expect(check.code).toBe(0)
    expect(check.stdout).toContain('✓ Fault exercised: ship-503: Triggered 1 time(s)')
    const inspect = await runCli(['inspect', report])
    expect(inspect.code).toBe(0)
    expect(inspect.stdout).toContain('rule every-item: eligible 1, selected 1, triggered 1')
  })

  it('fails check, not the reading of the report, when a rule in force earlier never fired', async ({ dir, upstream }) => {
    const report = path.join(dir, 'unfired.json')
    const proxy = await startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--report', report, '--print-admin-token'], 2)
    const admin = /· admin (\S+)$/.exec(proxy.lines[0] as string)?.[1] as string
    const token = /^admin token: (\S+)/.exec(proxy.lines[1] as string)?.[1] as string
    try {
      const put = (rules: unknown[]) => fetch(`${admin}/rules`, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ rules }) })
      expect((await put([SHIP_503])).status).toBe(200)
      expect((await fetch(`${servedUrl(proxy)}/items/a`)).status).toBe(200)
      expect((await put([])).status).toBe(200)
      expect((await fetch(`${servedUrl(proxy)}/items/b`)).status).toBe(200)
    } finally {
      expect(await proxy.stop()).toBe(0)
    }
    const check = await runCli(['check', report])
    expect(check.code).toBe(1)
    expect(check.stdout).toContain('✗ Fault exercised: ship-503: Triggered 0 time(s); never eligible: no call was on a route matching "POST /ship"')
  })
})
