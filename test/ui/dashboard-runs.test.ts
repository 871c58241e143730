/**
 * The dashboard's runs view: every run of a proxy with its verdict (the lines of `toolstorm
 * inspect --runs`, through `GET /runs/lines`), filtered by verdict, route and text, a click opening
 * the run. Real traffic of three runs through `toolstorm proxy`, one of them committing twice.
 */
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RunLineWithRoutes } from '../../src/report/run-lines.js'
import { hasChromium, launchChromium, type LaunchedBrowser } from './browser.js'
import { startDashboardProxy, type DashboardProxy } from './dashboard-proxy.js'

let started: DashboardProxy
let chromium: LaunchedBrowser
let proxyUrl: string
let adminUrl: string
let dashboardUrl: string
let token: string

beforeAll(async () => {
  if (!hasChromium) return
  started = await startDashboardProxy()
  ;({ proxyUrl, adminUrl, token, dashboardUrl } = started)
  chromium = await launchChromium()
})

afterAll(async () => {
  await chromium?.close()
  await started?.close()
})

async function send(run: string, pathname: string, order?: string): Promise<number | 'reset'> {
  const init: RequestInit = order === undefined ? {} : { method: 'POST', body: JSON.stringify({ order }) }
  try {
    const response = await fetch(`${proxyUrl}${pathname}`, { ...init, headers: { 'x-toolstorm-run': run, 'content-type': 'application/json' } })
    await response.arrayBuffer()
    return response.status
  } catch {
    return 'reset'
  }
}

const admin = (pathname: string, init: RequestInit = {}) => fetch(`${adminUrl}${pathname}`, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } })

/** The rows the runs view shows, as `[run, verdict]`. */
const rows = (page: Page) => page.$$eval('.runs-table tbody tr', (trs) => trs.map((tr) => [(tr as any).dataset.run, (tr as any).dataset.verdict]))

describe.skipIf(!hasChromium)('the dashboard lists runs', () => {
  it('with their verdicts, filters them by failure, route and text, and opens the one clicked', async () => {
    // checkout-2's first shipment commits and its answer is lost; the agent ships again: a duplicate.
    expect((await admin('/rules?run=checkout-2', { method: 'PUT', body: JSON.stringify({ rules: [{ name: 'lost', route: 'POST /ship', kind: 'response_lost', calls: [1] }] }) })).status).toBe(200)
    expect([await send('checkout-1', '/items/a'), await send('checkout-1', '/ship', 'o-1')]).toEqual([200, 201])
    expect([await send('checkout-2', '/items/a'), await send('checkout-2', '/ship', 'o-2'), await send('checkout-2', '/ship', 'o-2')]).toEqual([200, 'reset', 201])
    expect(await send('search-3', '/items/b')).toBe(200)

    // The endpoint: the token as every admin route, the lines as inspect --runs prints them.
    expect((await fetch(`${adminUrl}/runs/lines`)).status).toBe(401)
    expect((await admin('/runs/lines?failed=1')).status).toBe(400)
    const lines = (await (await admin('/runs/lines')).json()) as { runs: RunLineWithRoutes[]; total: number; failed: number }
    const byRun = Object.fromEntries(lines.runs.map((line) => [line.run, line]))
    expect(byRun['checkout-2']).toMatchObject({ verdict: 'failed', calls: 3, statuses: { '200': 1, reset: 1, '201': 1 }, faults: { response_lost: 1 }, effects: 2, duplicates: 1 })
    expect(byRun['checkout-2']?.why).toContain('duplicate_effect')
    expect(byRun['checkout-1']).toMatchObject({ verdict: 'ok', calls: 2, effects: 1, duplicates: 0, why: [] })
    expect(byRun['search-3']).toMatchObject({ verdict: 'ok', calls: 1, effects: 0 })
    const shipRoute = byRun['checkout-1']?.routes.find((route) => route.startsWith('POST ')) as string
    expect(shipRoute).toBe('POST /ship')

    const page = await chromium.browser.newPage({ viewport: { width: 1400, height: 900 } })
    await page.goto(dashboardUrl)
    await page.locator('.connection:has-text("Live")').waitFor()
    await page.click('button:has-text("All runs")')
    await page.locator('[data-testid="runs-stats"]', { hasText: `${lines.total} runs · ${lines.failed} failed` }).waitFor()
    expect(lines.failed).toBe(1)
    expect(await rows(page)).toEqual(lines.runs.map((line) => [line.run, line.verdict]))
    const failing = page.locator('.runs-table tr[data-run="checkout-2"]')
    expect(await failing.locator('.badge').textContent()).toBe('FAIL')
    expect(await failing.locator('[data-field="statuses"]').textContent()).toBe('200×1 201×1 reset×1')
    expect(await failing.locator('[data-field="faults"]').textContent()).toBe('response_lost×1')
    expect(await failing.locator('[data-field="duplicates"]').textContent()).toBe('1')
    expect(await failing.locator('[data-field="why"]').textContent()).toContain('duplicate_effect')
    expect(await page.locator('.runs-table tr[data-run="checkout-1"] .badge').textContent()).toBe('ok')

    await page.check('text=Failed only')
    await expect.poll(() => rows(page)).toEqual([['checkout-2', 'failed']])
    await page.uncheck('text=Failed only')
    await page.selectOption('.runs select', shipRoute)
    await expect.poll(() => rows(page)).toEqual([
      ['checkout-1', 'ok'],
      ['checkout-2', 'failed'],
    ])
    await page.selectOption('.runs select', '')
    await page.fill('.runs input[type="search"]', 'search')
    await expect.poll(() => rows(page)).toEqual([['search-3', 'ok']])
    await page.fill('.runs input[type="search"]', 'DUPLICATE')
    await expect.poll(() => rows(page)).toEqual([['checkout-2', 'failed']])
    await page.fill('.runs input[type="search"]', 'nothing-like-this')
    await page.getByText('No run matches the filter.').waitFor()
    await page.fill('.runs input[type="search"]', '')

    // A click opens the run's own view, live, with its exchanges; the address names it, never the token.
    await page.click('.runs-table tr[data-run="checkout-2"] button')
    await page.locator('[data-testid="stats"]:has-text("3 calls · 1 faults · 2 effects")').waitFor()
    expect(await page.locator('.runs-table').count()).toBe(0)
    expect(await page.locator('.run-select select').inputValue()).toBe('checkout-2')
    expect(await page.locator('.exchange-row').count()).toBe(3)
    expect(new URL(page.url()).hash).toBe('#run=checkout-2')
    expect(page.url()).not.toContain(token)
    expect(await page.content()).not.toContain(token)
    await page.close()

    // The runs view has an address of its own.
    const linked = await chromium.browser.newPage({ viewport: { width: 1400, height: 900 } })
    await linked.goto(`${dashboardUrl}&view=runs`)
    await linked.locator('.runs-table tr[data-run="checkout-2"]').waitFor()
    expect(new URL(linked.url()).hash).toBe('#view=runs')
    await linked.close()
  })
})
