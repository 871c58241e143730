/**
 * The dashboard's contracts fail a run whose effect report the proxy refused after the page
 * opened, as `toolstorm check` fails its report. Before, only the snapshot carried the refusals:
 * an effect report refused while the page followed the run left "No duplicate side effects"
 * passing on the page (the live events never said so) until the page was reloaded.
 */
import { describe, expect } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'
import { closing } from '../helpers/teardown.js'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { hasChromium, launchChromium } from './browser.js'
import { startDashboardProxy } from './dashboard-proxy.js'

describe.skipIf(!hasChromium)('the dashboard after an effect report is refused', { timeout: 60_000 }, () => {
  it('fails "No duplicate side effects" live, saying why, as toolstorm check does', async ({ dir }) => {
    const { proxyUrl, adminUrl, token, dashboardUrl } = closing(await startDashboardProxy())
    const chromium = closing(await launchChromium())
    const page = await chromium.browser.newPage()
    await page.goto(dashboardUrl)
    await page.locator('.connection:has-text("Live")').waitFor()
    const shipped = await fetch(`${proxyUrl}/ship`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order: 'o-1' }) })
    expect(shipped.status).toBe(201)
    await page.locator('[data-testid="stats"]:has-text("1 calls · 0 faults · 1 effects")').waitFor()
    const check = page.locator('[data-check="No duplicate side effects"]')
    expect(await check.textContent()).toContain('0 duplicate effect(s) across 1 commits')
    expect(await check.textContent()).not.toContain('fail')

    // A tool server's report the proxy cannot place (a stale call id): counted in every run kept, so a commit may be missing.
    const refused = await fetch(`${adminUrl}/effects`, { method: 'POST', body: JSON.stringify({ name: 'shipment', key: 'o-2', call: 'made-up' }) })
    expect(refused.status).toBe(400)
    await page.locator('[data-check="No duplicate side effects"]:has-text("1 effect report(s) were refused")').waitFor({ timeout: 10_000 })
    expect(await check.textContent()).toContain('fail')

    // The same verdict as toolstorm check on the run's report.
    const file = path.join(dir, 'report.json')
    await writeFile(file, await (await fetch(`${adminUrl}/report`, { headers: { authorization: `Bearer ${token}` } })).text())
    const checked = await runCli(['check', file])
    expect([checked.code, checked.stdout]).toEqual([1, expect.stringContaining('✗ No duplicate side effects: 0 duplicate effect(s) across 1 commits, but 1 effect report(s) were refused')])
  })
})
