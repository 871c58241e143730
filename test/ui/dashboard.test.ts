/**
 * The live dashboard end to end: `toolstorm proxy` started as a user does, its printed dashboard
 * URL opened in Debian's Chromium, real traffic through the proxy.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RecoveryRecord } from '../../src/engine/schema/report.js'
import { runCli } from '../helpers/cli.js'
import type { Upstream } from '../helpers/upstream.js'
import { hasChromium, launchChromium, type LaunchedBrowser } from './browser.js'
import { startCli, type RunningCli } from './spawn-cli.js'
import { startDashboardProxy, type DashboardProxy } from './dashboard-proxy.js'

// Browser globals used inside page.evaluate callbacks: the Node type-check has no DOM lib.
declare const document: any
type HTMLElement = any
type HTMLTextAreaElement = any

let dir: string
let upstream: Upstream
let started: DashboardProxy
let proxy: RunningCli
let chromium: LaunchedBrowser
let proxyUrl: string
let adminUrl: string
let dashboardUrl: string
let token: string

const RULES = {
  seed: 7,
  maxCalls: 50,
  rules: [
    { name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [2], delay: 1 },
    { name: 'lost', route: 'POST /ship', kind: 'response_lost', calls: [1] },
  ],
}

beforeAll(async () => {
  if (!hasChromium) return
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-dashboard-ui-'))
  const rules = path.join(dir, 'rules.json')
  await writeFile(rules, JSON.stringify(RULES))
  started = await startDashboardProxy(['--rules', rules])
  ;({ proxy, upstream, proxyUrl, adminUrl, token, dashboardUrl } = started)
  chromium = await launchChromium()
})

afterAll(async () => {
  await chromium?.close()
  await started?.close()
  if (dir) await rm(dir, { recursive: true, force: true })
})

async function send(pathname: string, init: RequestInit = {}): Promise<number | 'reset'> {
  try {
    const response = await fetch(`${proxyUrl}${pathname}`, init)
    await response.arrayBuffer()
    return response.status
  } catch {
    return 'reset'
  }
}

async function coverage(page: Page, rule: string): Promise<Record<string, number>> {
  return page.$eval(`tr[data-rule="${rule}"]`, (row) =>
    Object.fromEntries([...row.querySelectorAll('[data-count]')].map((cell) => [(cell as HTMLElement).dataset.count as string, Number(cell.textContent)])),
  )
}

async function openDashboard(width = 1400): Promise<Page> {
  const page = await chromium.browser.newPage({ viewport: { width, height: 900 }, acceptDownloads: true })
  await page.goto(dashboardUrl)
  await page.locator('.connection:has-text("Live")').waitFor()
  return page
}

describe.skipIf(!hasChromium)('the live dashboard', () => {
  it('is printed as the third line, with the admin token in its fragment; the first two lines stay as they were', () => {
    expect(proxy.lines[0]).toMatch(/^toolstorm proxy (http:\/\/127\.0\.0\.1:\d+) \(reverse → \S+\) · admin (http:\/\/127\.0\.0\.1:\d+)$/)
    expect(proxy.lines[1]).toMatch(/^admin token: \S+ {2}\(Authorization: Bearer <token>; tool servers report effects to http:\/\/127\.0\.0\.1:\d+\/effects\)$/)
    expect(dashboardUrl).toBe(`${adminUrl}/dashboard/#token=${token}`)
  })

  it('shows nothing without the token: the page is an empty shell and every data request is refused', async () => {
    const shell = await fetch(`${adminUrl}/dashboard/`)
    expect(shell.status).toBe(200)
    expect(shell.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(await shell.text()).not.toContain(token)
    for (const endpoint of ['/events', '/report', '/runs', '/rules']) expect((await fetch(`${adminUrl}${endpoint}`)).status).toBe(401)
    expect((await fetch(`${adminUrl}/events`, { headers: { authorization: 'Bearer not-the-token-at-all' } })).status).toBe(401)
    expect((await fetch(`${adminUrl}/dashboard/rules`, { method: 'PUT', body: '{}' })).status).toBe(401)

    const page = await chromium.browser.newPage()
    await page.goto(`${adminUrl}/dashboard/`)
    await page.getByText('This page needs the admin token.').waitFor()
    await page.close()
    const guessing = await chromium.browser.newPage()
    await guessing.goto(`${adminUrl}/dashboard/#token=wrong-token-guess-123`)
    await guessing.getByText('The proxy refused this token').waitFor()
    expect(await guessing.locator('.exchange-row').count()).toBe(0)
    await guessing.close()
  })

  it('shows every exchange, its fault, effects, coverage and contracts as traffic flows', async () => {
    const page = await openDashboard()
    expect(page.url()).not.toContain(token)
    const statuses = [await send('/items/a'), await send('/items/a'), await send('/items/a')]
    expect(statuses).toEqual([200, 429, 200])
    const ship = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order: 'o-1' }) }
    expect([await send('/ship', ship), await send('/ship', ship)]).toEqual(['reset', 201])

    await page.locator('[data-testid="stats"]:has-text("5 calls · 2 faults · 2 effects")').waitFor()
    const report = (await (await fetch(`${adminUrl}/report`, { headers: { authorization: `Bearer ${token}` } })).json()) as { coverage: Record<string, Record<string, number>>; recovery: RecoveryRecord[] }
    expect(await coverage(page, 'busy')).toEqual(report.coverage.busy)
    expect(await coverage(page, 'lost')).toEqual(report.coverage.lost)
    expect(await coverage(page, 'busy')).toMatchObject({ selected: 1, triggered: 1 })
    expect(await coverage(page, 'lost')).toMatchObject({ selected: 1, triggered: 1 })
    expect(await page.locator('[data-check="No duplicate side effects"]').textContent()).toContain('fail')
    expect(await page.locator('[data-check="Call budget"]').textContent()).toContain('5 / 50 calls')
    // Recovery per triggered fault, as the report has it: each fault's route succeeded on the next call.
    const recovery = () =>
      page.$$eval('tr[data-recovery]', (rows) =>
        rows.map((row) => [Number((row as HTMLElement).dataset.recovery), (row as HTMLElement).dataset.recovered, ...[...row.querySelectorAll('[data-count]')].map((cell) => (cell.textContent ?? '').trim())]),
      )
    // Polled: the page may still be rendering the last call's end.
    await expect.poll(recovery, { timeout: 10_000 }).toEqual(report.recovery.map((record) => [record.call, String(record.recovered), String(record.calls), String(record.modelCalls), String(record.inputTokens + record.outputTokens), `${record.seconds} s`]))
    expect(report.recovery.map((record) => [record.call, record.recovered, record.calls])).toEqual([
      [2, true, 1],
      [4, true, 1],
    ])

    const rows = await page.$$eval('.exchange-row', (elements) => elements.map((row) => row.textContent ?? ''))
    expect(rows).toHaveLength(5)
    expect(rows[1]).toContain('busy · rate_limit')
    expect(rows[1]).toContain('429')
    expect(rows[3]).toContain('reset')
    expect(rows[3]).toContain('✎1')

    // The list is a listbox: Home, then arrows, select an exchange and the details follow.
    await page.focus('.exchange-viewport')
    await page.keyboard.press('Home')
    await page.keyboard.press('ArrowDown')
    await page.locator('.exchange-detail h3:has-text("#2")').waitFor()
    expect(await page.locator('.exchange-detail').textContent()).toContain('busy (rate_limit, before-upstream) injected')
    await page.keyboard.press('End')
    await page.locator('.exchange-detail h3:has-text("#5")').waitFor()
    expect(await page.locator('.exchange-detail').textContent()).toContain('shipment · o-1')
    await page.close()
  })

  it("puts the verdict of the agent's claim beside its call, and lists the contradicted claim under the contract", async () => {
    const run = 'claims-1'
    const page = await chromium.browser.newPage({ viewport: { width: 1400, height: 900 } })
    await page.goto(`${dashboardUrl}&run=${run}`)
    await page.locator('.connection:has-text("Live")').waitFor()
    // The shipment commits (its answer may be lost); the agent gives up and says so: a silent commit.
    await send('/ship', { method: 'POST', headers: { 'content-type': 'application/json', 'x-toolstorm-run': run }, body: JSON.stringify({ order: 'o-7' }) })
    const claim = await fetch(`${adminUrl}/claims`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ tool: 'POST /ship', status: 'failure', run }) })
    expect(claim.status).toBeLessThan(300)
    await page.locator('.exchange-row [data-verdict="silent_commit"]').waitFor()
    expect(await page.locator('.exchange-row').first().textContent()).toContain('silent commit')
    const check = await page.locator('[data-check="Claims match effects"]').textContent()
    expect(check).toContain('fail')
    expect(check).toContain('#1 POST /ship failure: silent_commit (call 1; shipment "o-7")')
    await page.click('.exchange-row')
    await page.locator('.exchange-detail [data-claim="1"]:has-text("#1 POST /ship failure: silent commit")').waitFor()
    await page.close()
  })

  it('changes the rules live: errors are shown at the field, and new rules take effect', async () => {
    const page = await openDashboard()
    await page.click('button:has-text("Edit rules")')
    const editor = page.locator('textarea')
    const invalid = JSON.stringify({ seed: 7, rules: [{ name: 'down', route: 'GET /items/*', kind: 'explode' }, { name: 'late', route: 'GET /items/*', kind: 'latency', delay: -1, colour: 'red' }] }, null, 2)
    await editor.fill(invalid)
    await page.click('button:has-text("Apply rules")')
    const kindError = page.locator('.field-errors li[data-path="$.rules[0].kind"]')
    await kindError.waitFor()
    const line = Number(await kindError.getAttribute('data-line'))
    expect(invalid.split('\n')[line - 1]).toContain('"kind": "explode"')
    expect(await page.locator('.gutter-line.error').allTextContents()).toContain(String(line))
    const unknown = page.locator('.field-errors li', { hasText: 'unknown field "colour"' })
    expect(invalid.split('\n')[Number(await unknown.getAttribute('data-line')) - 1]).toContain('"colour"')
    expect(await editor.getAttribute('aria-invalid')).toBe('true')
    // "Line N" moves the cursor to the field.
    await kindError.locator('button').click()
    const caretLine = await editor.evaluate((element) => (element as HTMLTextAreaElement).value.slice(0, (element as HTMLTextAreaElement).selectionStart).split('\n').length)
    expect(caretLine).toBe(line)
    // The old rules stay in force after a refusal.
    expect(await send('/items/z')).toBe(200)

    await editor.fill(JSON.stringify({ seed: 7, rules: [{ name: 'down', route: 'GET /items/*', kind: 'unavailable' }] }, null, 2))
    await page.click('button:has-text("Apply rules")')
    await page.getByText('Rules applied: 1 rule(s) in force.').waitFor()
    await page.locator('tr[data-rule="down"]').waitFor()
    expect(await send('/items/b')).toBe(503)
    await page.waitForFunction(() => document.querySelector('tr[data-rule="down"] [data-count="triggered"]')?.textContent === '1')
    await page.locator('.exchange-row:has-text("down · unavailable")').waitFor()

    // The same rules, as YAML.
    await page.check('input[name="rules-format"][value="yaml"]')
    await page.waitForFunction(() => (document.querySelector('textarea') as HTMLTextAreaElement).value.includes('kind: unavailable'))
    await page.click('button:has-text("Apply rules")')
    await page.getByText('Rules applied: 1 rule(s) in force.').waitFor()

    // A rule that can never fire is applied, with a warning naming the route meant.
    await page.check('input[name="rules-format"][value="json"]')
    // The switch re-renders the text asynchronously: filling before it lands would be overwritten.
    await page.waitForFunction(() => (document.querySelector('textarea') as HTMLTextAreaElement).value.trimStart().startsWith('{'))
    await editor.fill(JSON.stringify({ seed: 7, rules: [{ name: 'down', route: 'get /items/*', kind: 'unavailable' }] }, null, 2))
    await page.click('button:has-text("Apply rules")')
    await page.getByText('Warning: rule "down": route "get /items/*" can never match: route names carry the method in upper case, and globs are case-sensitive. Did you mean "GET /items/*"?').waitFor()
    // Leave the rule that fires in force: the next test counts on it.
    await editor.fill(JSON.stringify({ seed: 7, rules: [{ name: 'down', route: 'GET /items/*', kind: 'unavailable' }] }, null, 2))
    await page.click('button:has-text("Apply rules")')
    await page.waitForFunction(() => {
      const status = document.querySelector('p[role="status"]')?.textContent ?? ''
      return status.startsWith('Rules applied') && !status.includes('Warning')
    })
    await page.close()
  })

  it('follows another run, exports the report (check accepts it) and resets the run', async () => {
    const page = await openDashboard()
    expect(await send('/items/w', { headers: { 'x-toolstorm-run': 'worker-1' } })).toBe(503)
    await page.locator('select >> option[value="worker-1"]').waitFor({ state: 'attached' })
    await page.selectOption('.run-select select', 'worker-1')
    await page.locator('[data-testid="stats"]:has-text("1 calls")').waitFor()
    expect(await page.locator('.exchange-row').count()).toBe(1)

    const [download] = await Promise.all([page.waitForEvent('download'), page.click('button:has-text("Export report")')])
    const file = path.join(dir, download.suggestedFilename())
    await download.saveAs(file)
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ kind: 'toolstorm.report', run: 'worker-1' })
    const check = await runCli(['check', file])
    expect(check.code, check.stderr).toBe(0)

    await page.click('button:has-text("Reset run")')
    await page.locator('[data-testid="stats"]:has-text("0 calls")').waitFor()
    expect(await page.locator('.exchange-row').count()).toBe(0)
    // No cassette endpoint on this proxy: no cassette button.
    expect(await page.locator('button:has-text("Export cassette")').count()).toBe(0)
    await page.close()
  })

  it('shows an MCP call\'s method, tool, JSON-RPC id, answer and redacted arguments', async () => {
    const page = await openDashboard()
    const body = JSON.stringify({ jsonrpc: '2.0', id: 41, method: 'tools/call', params: { name: 'create_shipment', arguments: { order_id: 'o-9', api_key: 'sk-live-4f9a8b7c6d5e4f3a2b1c0d9e' } } })
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-toolstorm-run': 'mcp-run' }
    expect(await send('/echo', { method: 'POST', headers, body })).toBe(200)
    await page.locator('select >> option[value="mcp-run"]').waitFor({ state: 'attached' })
    await page.selectOption('.run-select select', 'mcp-run')
    await page.locator('.exchange-row:has-text("tools/call create_shipment")').click()
    await page.locator('.exchange-detail h3:has-text("tools/call create_shipment")').waitFor()
    const detail = (await page.locator('.exchange-detail .mcp').textContent()) ?? ''
    expect(detail).toContain('tools/call create_shipment · id 41')
    expect(detail).toContain('answer: none (no JSON-RPC answer reached the client)')
    expect(detail).toContain('"order_id":"o-9"')
    expect(detail).not.toContain('sk-live-4f9a8b7c6d5e4f3a2b1c0d9e')
    await page.close()
  })

  it('fits a 390 px screen', async () => {
    const page = await openDashboard(390)
    await page.click('button:has-text("Edit rules")')
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await page.close()
  })
})

describe.skipIf(!hasChromium)('the dashboard of a recording proxy', () => {
  it('exports the run\'s cassette and warns that bodies in it were cut at the body limit', async () => {
    const file = path.join(dir, 'recording.cassette.jsonl')
    const recording = await startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--record', file, '--body-limit', '100000', '--print-admin-token'], 3)
    try {
      const url = /^toolstorm proxy (\S+) /.exec(recording.lines[0] as string)?.[1] as string
      const dashboard = /^dashboard: (\S+)$/.exec(recording.lines[2] as string)?.[1] as string
      await (await fetch(`${url}/bytes/150000`, { headers: { 'x-toolstorm-run': 'big' } })).arrayBuffer()
      const page = await chromium.browser.newPage({ viewport: { width: 1400, height: 900 }, acceptDownloads: true })
      await page.goto(dashboard)
      await page.locator('.connection:has-text("Live")').waitFor()
      await page.locator('select >> option[value="big"]').waitFor({ state: 'attached' })
      await page.selectOption('.run-select select', 'big')
      const [download] = await Promise.all([page.waitForEvent('download'), page.click('button:has-text("Export cassette")')])
      await page
        .getByText('Cassette of run "big" downloaded. 1 body in it was cut at the body limit (marked "truncated"): replay breaks them off and fails unless --allow-truncated. Record with a larger --body-limit to keep them whole.')
        .waitFor()
      const exported = path.join(dir, download.suggestedFilename())
      await download.saveAs(exported)
      const line = JSON.parse((await readFile(exported, 'utf8')).trim().split('\n')[1] as string) as { response: { body: { size: number; truncated: boolean } } }
      expect(line.response.body).toMatchObject({ size: 150_000, truncated: true })
      await page.close()
    } finally {
      await recording.stop()
    }
  })
})
