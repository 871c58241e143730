/**
 * The browser lab end to end: `toolstorm lab` serves it, Debian's Chromium runs it, and its
 * verdicts equal `toolstorm demo --json` for the same settings.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { RecoveryRecord } from '../../src/engine/schema/report.js'
import { recoveryText } from '../../web/lab/recovery-text.js'
import { ROOT, runCli } from '../helpers/cli.js'
import { hasChromium, launchChromium, type LaunchedBrowser } from './browser.js'
import { startCli, type RunningCli } from './spawn-cli.js'

// Browser globals used inside page.evaluate callbacks: the Node type-check has no DOM lib.
declare const document: any
type HTMLElement = any

interface Settings {
  scenario: string
  seed: number
  percent: number
  budget: number
}

interface Row {
  policy: string
  verdict: string
  calls: number
  shipments: number
  elapsedMs: number
  refused: number
  /** Per triggered fault: its call, whether it recovered, and what the cell says it cost. */
  recovery: string[]
}

let lab: RunningCli
let url: string
let chromium: LaunchedBrowser
let dir: string

beforeAll(async () => {
  if (!hasChromium) return
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-lab-ui-'))
  lab = await startCli(['lab', '--port', '0'], 1)
  url = /^toolstorm lab (\S+) /.exec(lab.lines[0] as string)?.[1] as string
  chromium = await launchChromium()
})

afterAll(async () => {
  await chromium?.close()
  await lab?.stop()
  if (dir) await rm(dir, { recursive: true, force: true })
})

async function tableRows(page: Page): Promise<Row[]> {
  return page.$$eval('table.comparison tbody tr', (rows) =>
    rows.map((row) => {
      const cell = (name: string) => row.querySelector(`[data-cell="${name}"]`) as HTMLElement
      const refused = /\+(\d+) refused/.exec(cell('calls').textContent ?? '')
      return {
        policy: (row as HTMLElement).dataset.policy as string,
        verdict: (cell('verdict').textContent ?? '').trim(),
        calls: Number(cell('calls').dataset.value),
        shipments: Number(cell('shipments').dataset.value),
        elapsedMs: Math.round(Number(cell('elapsed').dataset.value) * 1000),
        refused: refused ? Number(refused[1]) : 0,
        recovery: [...cell('recovery').querySelectorAll('li')].map((item: HTMLElement) => `${item.dataset.recovery} ${item.dataset.recovered} ${(item.textContent ?? '').trim()}`),
      }
    }),
  )
}

async function cliRows(settings: Settings): Promise<Row[]> {
  const result = await runCli(['demo', '--policy', 'all', '--json', '--scenario', settings.scenario, '--seed', String(settings.seed), '--probability', String(settings.percent / 100), '--max-calls', String(settings.budget)])
  expect(result.code, result.stderr).toBe(0)
  const document = JSON.parse(result.stdout) as { runs: Array<{ policy: string; contract: { passed: boolean }; stats: { calls: number; effects: number; elapsed: number }; report: { budgetRejections: number; recovery?: RecoveryRecord[] } }> }
  return document.runs.map((run) => ({
    policy: run.policy,
    verdict: run.contract.passed ? 'PASS' : 'FAIL',
    calls: run.stats.calls,
    shipments: run.stats.effects,
    elapsedMs: Math.round(run.stats.elapsed * 1000),
    refused: run.report.budgetRejections,
    recovery: (run.report.recovery ?? []).map((record) => `${record.call} ${record.recovered} #${record.call} ${record.rule} ${recoveryText(record)}`),
  }))
}

/** Set the controls as a person does, and run the comparison. */
async function runComparison(page: Page, settings: Settings): Promise<void> {
  await page.check(`input[name="scenario"][value="${settings.scenario}"]`)
  await page.fill('input[type="range"]', String(settings.percent))
  await page.fill('input[name="seed"]', String(settings.seed))
  await page.fill('input[name="budget"]', String(settings.budget))
  await page.click('button:has-text("Run comparison")')
  // The table shows the new settings' results once the "Settings changed" note is gone: the
  // completion notice alone may still be the previous run's.
  await page.locator('p.notice:has-text("Settings changed")').waitFor({ state: 'hidden' })
  await page.getByText('Comparison complete. All three policies ran in your browser.').waitFor()
}

const SETTINGS: Settings[] = [
  { scenario: 'lost_ack', seed: 42, percent: 100, budget: 8 },
  { scenario: 'rate_limit', seed: 1729, percent: 65, budget: 3 },
]

describe.skipIf(!hasChromium)('the browser lab', () => {
  it('gives the CLI’s verdicts, calls, shipments, times and recovery per fault for the same settings', async () => {
    const page = await chromium.browser.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(url)
    await page.locator('table.comparison tbody tr').first().waitFor()
    for (const settings of SETTINGS) {
      await runComparison(page, settings)
      const cli = await cliRows(settings)
      expect(cli).toHaveLength(3)
      // Each policy's triggered fault: the optimistic agent never recovers, the others do.
      expect(cli.map((row) => row.recovery.map((text) => text.split(' ')[1]))).toEqual([['false'], ['true'], ['true']])
      // Polled: the table re-renders after the run's notice may already show.
      await expect.poll(() => tableRows(page), { timeout: 10_000 }).toEqual(cli)
    }
    expect(errors).toEqual([])
    await page.close()
  })

  it('exports the comparison in the shape of `demo --policy all --json`, which inspect and check accept', async () => {
    const page = await chromium.browser.newPage({ acceptDownloads: true })
    await page.goto(`${url}?scenario=rate_limit&seed=1729&p=0.65&budget=3&policy=resilient`)
    await page.locator('table.comparison tbody tr').first().waitFor()
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('button:has-text("Export comparison")')])
    expect(download.suggestedFilename()).toBe('toolstorm-rate_limit-seed1729.json')
    const file = path.join(dir, download.suggestedFilename())
    await download.saveAs(file)
    const exported = JSON.parse(await (await import('node:fs/promises')).readFile(file, 'utf8'))
    const cli = await runCli(['demo', '--policy', 'all', '--json', '--scenario', 'rate_limit', '--seed', '1729', '--probability', '0.65', '--max-calls', '3'])
    const expected = JSON.parse(cli.stdout)
    const shape = (value: unknown): unknown =>
      Array.isArray(value) ? value.slice(0, 1).map(shape) : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, k === 'routes' || k === 'coverage' ? '{…}' : shape(v)])) : typeof value
    expect(shape(exported)).toEqual(shape(expected))
    expect(exported.runs.map((run: { contract: unknown }) => run.contract)).toEqual(expected.runs.map((run: { contract: unknown }) => run.contract))

    const inspect = await runCli(['inspect', file])
    expect(inspect.code, inspect.stderr).toBe(0)
    expect(inspect.stdout).toContain('Valid report v1')
    const check = await runCli(['check', file, '--max-calls', '3', '--json'])
    expect(check.stderr).toBe('')
    const verdicts = (JSON.parse(check.stdout) as { runs: Array<{ passed: boolean }> }).runs.map((run) => run.passed)
    expect(check.code).toBe(verdicts.every(Boolean) ? 0 : 1)
    // toolstorm check fails the runs the lab failed, the scenario's own checks included (Retry-after respected).
    expect(verdicts).toEqual(exported.runs.map((run: { contract: { passed: boolean } }) => run.contract.passed))

    const [single] = await Promise.all([page.waitForEvent('download'), page.click('button:has-text("Export selected run")')])
    expect(single.suggestedFilename()).toBe('toolstorm-rate_limit-resilient-seed1729.json')
    const singleFile = path.join(dir, single.suggestedFilename())
    await single.saveAs(singleFile)
    expect((await runCli(['inspect', singleFile])).code).toBe(0)
    await page.close()
  })

  it('copies a link that restores the settings, and the link reruns them', async () => {
    const context = await chromium.browser.newContext()
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(url).origin })
    const page = await context.newPage()
    await page.goto(url)
    await page.locator('table.comparison tbody tr').first().waitFor()
    await runComparison(page, { scenario: 'schema_drift', seed: 7, percent: 50, budget: 5 })
    await page.click('button:has-text("Validated retries")')
    await page.click('button:has-text("Copy settings link")')
    await page.getByText(/Settings link copied|Clipboard unavailable/).waitFor()
    const link = page.url()
    expect(new URL(link).search).toBe('?scenario=schema_drift&seed=7&p=0.5&budget=5&policy=resilient')

    const restored = await context.newPage()
    await restored.goto(link)
    await restored.locator('table.comparison tbody tr').first().waitFor()
    expect(await restored.isChecked('input[name="scenario"][value="schema_drift"]')).toBe(true)
    expect(await restored.inputValue('input[name="seed"]')).toBe('7')
    expect(await restored.inputValue('input[name="budget"]')).toBe('5')
    expect(await restored.inputValue('input[type="range"]')).toBe('50')
    expect(await restored.getAttribute('tr[data-policy="resilient"] .policy-button', 'aria-pressed')).toBe('true')
    expect(await tableRows(restored)).toEqual(await tableRows(page))
    await context.close()
  })

  it('is usable from the keyboard, blocks invalid numbers, and fits a 390 px screen', async () => {
    const page = await chromium.browser.newPage({ viewport: { width: 390, height: 844 } })
    await page.goto(url)
    await page.locator('table.comparison tbody tr').first().waitFor()
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)

    // Arrow keys move through the scenarios; Enter in a field runs the comparison.
    await page.focus('input[name="scenario"][value="lost_ack"]')
    await page.keyboard.press('ArrowDown')
    expect(await page.isChecked('input[name="scenario"][value="rate_limit"]')).toBe(true)
    await page.focus('input[name="seed"]')
    await page.keyboard.press('Control+A')
    await page.keyboard.type('1x')
    expect(await page.getAttribute('input[name="seed"]', 'aria-invalid')).toBe('true')
    await page.keyboard.press('Enter')
    await page.getByText('Enter a whole-number seed from 0 to 999999 and a call limit from 1 to 20.').waitFor()
    // Focus moves to the error (in the render after the one that shows it); back to the field to fix it.
    await page.waitForFunction(() => document.activeElement?.getAttribute('role') === 'alert', undefined, { timeout: 5_000 })
    await page.focus('input[name="seed"]')
    await page.keyboard.press('Control+A')
    await page.keyboard.type('11')
    await page.keyboard.press('Enter')
    await page.getByText('Comparison complete. All three policies ran in your browser.').waitFor()
    expect(await page.locator('.result-head h2').textContent()).toBe('Rate-limited inventory reads')

    // A policy row is a toggle button; the trace opens a call's details in a dialog that Escape closes.
    await page.focus('tr[data-policy="optimistic"] .policy-button')
    await page.keyboard.press('Enter')
    expect(await page.getAttribute('tr[data-policy="optimistic"] .policy-button', 'aria-pressed')).toBe('true')
    await page.focus('.trace-row')
    await page.keyboard.press('Enter')
    await page.locator('dialog[open] h2').waitFor()
    await page.keyboard.press('Escape')
    await page.locator('dialog[open]').waitFor({ state: 'detached' })
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await page.close()
  })

  it('works offline from the built files, opened straight from disk', async () => {
    const page = await chromium.browser.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(pathToFileURL(path.join(ROOT, 'dist/lab/index.html')).href)
    await page.locator('table.comparison tbody tr').first().waitFor()
    expect((await tableRows(page)).map((row) => row.verdict)).toEqual(['FAIL', 'FAIL', 'PASS'])
    expect(errors).toEqual([])
    await page.close()
  })
})
