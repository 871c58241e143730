import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { BIN, runCli } from '../helpers/cli.js'
import { test } from '../helpers/file-fixtures.js'

// Issue #15 item 6: rules that can never fire are named when the rules are read.
const ROUTES = { create_shipment: 'POST /ship' }
const NEVER = [
  { name: 'typo', route: 'create_shipmnt', kind: 'response_lost', calls: [1] },
  { name: 'lower', route: 'post /orders', kind: 'reset' },
  { name: 'no-method', route: '/ship', kind: 'reset' },
]
const WARNINGS = [
  '[toolstorm] warning: rule "typo": route "create_shipmnt" is not a declared route, nor "METHOD /path", so the rule can never fire. Did you mean "create_shipment"?',
  '[toolstorm] warning: rule "lower": route "post /orders" can never match: route names carry the method in upper case, and globs are case-sensitive. Did you mean "POST /orders"?',
  '[toolstorm] warning: rule "no-method": route "/ship" can never match: a route name is a declared route or "METHOD /path", with the method. Did you mean "create_shipment" (POST /ship)?',
]

/** `never`: a rules file of the rules that can never fire, and one that can, written once for the file. */
const it = test.extend('never', { scope: 'file' }, async ({ dir }) => {
  const never = path.join(dir, 'never.json')
  await writeFile(never, JSON.stringify({ routes: ROUTES, rules: [...NEVER, { name: 'fine', route: 'create_shipment', kind: 'reset', calls: [5] }] }))
  return never
})

describe('toolstorm rules', () => {
  it('warns about each rule that can never fire, and exits 0 (1 with --strict)', async ({ never }) => {
    const result = await runCli(['rules', never])
    expect(result.code).toBe(0)
    expect(result.stderr.trim().split('\n')).toEqual(WARNINGS)
    expect(result.stdout).toMatch(/^Rules v1 with 3 warning\(s\): 4 rule\(s\)/)
    expect(result.stdout).not.toContain('Valid')
    expect(result.stdout).toMatch(/^ {2}typo: on create_shipmnt .*\(can never fire\)$/m)
    expect(result.stdout).not.toMatch(/^ {2}fine: .*can never fire/m)
    expect((await runCli(['rules', never, '--strict'])).code).toBe(1)
  })

  it('stays quiet and exits 0 with --strict when every rule can fire', async ({ dir }) => {
    const fine = path.join(dir, 'fine.json')
    await writeFile(fine, JSON.stringify({ routes: ROUTES, rules: [{ name: 'a', route: 'create_shipment', kind: 'reset' }, { name: 'b', route: 'GET /items/*', kind: 'reset' }] }))
    const result = await runCli(['rules', fine, '--strict'])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe('')
    expect(result.stdout).toMatch(/^Valid rules v1: 2 rule\(s\)/)
  })
})

describe('toolstorm rules and a METHOD /path glob on a declared route (#29)', () => {
  it('notes that the glob matches the declared route by its path, and passes --strict', async ({ dir }) => {
    const file = path.join(dir, 'by-path.json')
    await writeFile(file, JSON.stringify({ routes: { check_inventory: 'GET /inventory/:sku' }, rules: [{ name: 'inventory-busy', route: 'GET /inventory/*', kind: 'rate_limit', calls: [1, 2], delay: 0.6 }] }))
    const result = await runCli(['rules', file, '--strict'])
    expect(result.code).toBe(0)
    expect(result.stderr.trim()).toBe('[toolstorm] note: rule "inventory-busy": route "GET /inventory/*" matches the requests of "check_inventory" (GET /inventory/:sku) by their path: those calls are named after the declared route, and "calls" counts its ordinals.')
    expect(result.stdout).toMatch(/^Valid rules v1: 1 rule\(s\)/)
  })
})

describe('toolstorm proxy with rules that can never fire', () => {
  it('warns at start and on PUT /rules, and check says the rule was never eligible and which routes were seen', async ({ dir, upstream, never }) => {
    const report = path.join(dir, 'report.json')
    const child = spawn(process.execPath, [BIN, 'proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--rules', never, '--report', report, '--print-admin-token'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    await new Promise<void>((resolve) => child.stdout.on('data', (chunk: Buffer) => (stdout += chunk).split('\n').length > 2 && resolve()))
    const [, proxyUrl, adminUrl] = /^toolstorm proxy (\S+) .* · admin (\S+)$/m.exec(stdout) ?? []
    const token = /^admin token: (\S+) /m.exec(stdout)?.[1]
    expect(stderr.trim().split('\n')).toEqual(WARNINGS)

    const put = await fetch(`${adminUrl}/rules`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ routes: ROUTES, rules: [NEVER[0], NEVER[1]] }),
    })
    expect(put.status).toBe(200)
    expect(await put.json()).toEqual({
      ok: true,
      rules: 2,
      warnings: [
        { rule: 'typo', route: 'create_shipmnt', message: 'route "create_shipmnt" is not a declared route, nor "METHOD /path", so the rule can never fire. Did you mean "create_shipment"?' },
        { rule: 'lower', route: 'post /orders', message: 'route "post /orders" can never match: route names carry the method in upper case, and globs are case-sensitive. Did you mean "POST /orders"?' },
      ],
    })

    expect((await fetch(`${proxyUrl}/ship`, { method: 'POST', body: '{}' })).status).toBeLessThan(500)
    expect((await fetch(`${proxyUrl}/items/1`)).status).toBe(200)
    child.kill('SIGTERM')
    expect(await exited).toBe(0)
    const check = await runCli(['check', report])
    expect(check.code).toBe(1)
    expect(check.stdout).toContain('✗ Fault exercised: typo: Triggered 0 time(s); never eligible: no call was on a route matching "create_shipmnt" (routes seen: create_shipment ×1, GET /items/1 ×1)')
  })
})
