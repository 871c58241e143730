/**
 * 10,000 exchanges stream into the dashboard without stalling it: the list is virtualised and
 * updates are batched, so frames stay short while traffic flows and while scrolling.
 * Thresholds are generous (a loaded 2-core CI machine), but a page that re-rendered every row
 * or re-rendered per event would blow through them by an order of magnitude.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Agent, request } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startUpstream, type Upstream } from '../helpers/upstream.js'
import { hasChromium, launchChromium, type LaunchedBrowser } from './browser.js'
import { startCli, type RunningCli } from './spawn-cli.js'

// Browser globals used inside page.evaluate callbacks: the Node type-check has no DOM lib.
declare const document: any, window: any, requestAnimationFrame: (callback: () => void) => number
type HTMLElement = any

const EXCHANGES = 10_000
const CONCURRENCY = 24

let dir: string
let upstream: Upstream
let proxy: RunningCli
let chromium: LaunchedBrowser

beforeAll(async () => {
  if (!hasChromium) return
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-dashboard-scale-'))
  upstream = await startUpstream()
  const rules = path.join(dir, 'rules.json')
  await writeFile(rules, JSON.stringify({ seed: 3, rules: [{ name: 'flaky', route: 'GET /items/*', kind: 'unavailable', probability: 0.1 }] }))
  proxy = await startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--rules', rules], 3)
  chromium = await launchChromium()
})

afterAll(async () => {
  await chromium?.close()
  await proxy?.stop()
  await upstream?.close()
  if (dir) await rm(dir, { recursive: true, force: true })
})

async function sendMany(proxyUrl: string, count: number): Promise<void> {
  const dispatcher = new Agent({ connections: CONCURRENCY, pipelining: 1 })
  let next = 0
  const worker = async () => {
    while (next < count) {
      const n = next++
      const { body } = await request(`${proxyUrl}/items/${n % 50}`, { dispatcher })
      await body.dump()
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  await dispatcher.close()
}

describe.skipIf(!hasChromium)('the dashboard at scale', () => {
  it(`renders ${EXCHANGES.toLocaleString('en')} live exchanges without stalling, and scrolls them smoothly`, async () => {
    const proxyUrl = /^toolstorm proxy (\S+) /.exec(proxy.lines[0] as string)?.[1] as string
    const dashboardUrl = /^dashboard: (\S+)$/.exec(proxy.lines[2] as string)?.[1] as string
    const page = await chromium.browser.newPage({ viewport: { width: 1400, height: 900 } })
    await page.goto(dashboardUrl)
    await page.locator('.connection:has-text("Live")').waitFor()
    // Watch the main thread while the traffic flows: every task over 50 ms is recorded.
    await page.evaluate(() => {
      const tasks: number[] = []
      ;(window as unknown as { longTasks: number[] }).longTasks = tasks
      new window.PerformanceObserver((list: any) => list.getEntries().forEach((entry: any) => tasks.push(entry.duration))).observe({ type: 'longtask', buffered: false })
    })

    const started = performance.now()
    await sendMany(proxyUrl, EXCHANGES)
    const trafficMs = performance.now() - started
    await page.locator(`[data-testid="stats"]:has-text("${EXCHANGES} calls")`).waitFor({ timeout: 30_000 })
    const caughtUpMs = performance.now() - started - trafficMs
    const longTasks = await page.evaluate(() => (window as unknown as { longTasks: number[] }).longTasks)
    const longest = Math.max(0, ...longTasks)
    const busy = longTasks.reduce((sum, duration) => sum + duration, 0)

    // Only the rows in view are in the DOM.
    const rendered = await page.locator('.exchange-row').count()
    expect(rendered).toBeGreaterThan(10)
    expect(rendered).toBeLessThan(80)

    // Jump around the whole list, one position per frame, and time the frames.
    const frames = await page.evaluate(async () => {
      const viewport = document.querySelector('.exchange-viewport') as HTMLElement
      const times: number[] = []
      let last = performance.now()
      for (let i = 0; i < 60; i++) {
        viewport.scrollTop = ((i * 7919) % 60) * (viewport.scrollHeight / 60)
        await new Promise((resolve) => requestAnimationFrame(() => resolve(undefined)))
        const now = performance.now()
        times.push(now - last)
        last = now
      }
      viewport.scrollTop = 5_000 * 32
      await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(undefined))))
      const ids = [...document.querySelectorAll('.exchange-row')].map((row: HTMLElement) => Number(row.dataset.id))
      return { times: times.sort((a, b) => a - b), ids }
    })
    const median = frames.times[Math.floor(frames.times.length / 2)] as number
    const worst = frames.times[frames.times.length - 1] as number
    expect(frames.ids).toContain(5_001)

    // A second dashboard opening on the full run gets it in one snapshot.
    const opened = performance.now()
    const second = await chromium.browser.newPage({ viewport: { width: 1400, height: 900 } })
    await second.goto(dashboardUrl)
    await second.locator(`[data-testid="stats"]:has-text("${EXCHANGES} calls")`).waitFor({ timeout: 30_000 })
    const snapshotMs = performance.now() - opened

    console.log(
      `[dashboard scale] ${EXCHANGES} exchanges in ${Math.round(trafficMs)} ms; page caught up ${Math.round(caughtUpMs)} ms later; ` +
        `longest main-thread task ${Math.round(longest)} ms (${longTasks.length} over 50 ms, ${Math.round(busy)} ms in all); scroll frames median ${median.toFixed(1)} ms, worst ${worst.toFixed(1)} ms; ` +
        `${rendered} rows in the DOM; a new page loaded the full run in ${Math.round(snapshotMs)} ms`,
    )
    expect(caughtUpMs).toBeLessThan(5_000)
    // Wall-clock durations: on a loaded 2-core machine a short task can be descheduled for a while.
    expect(longest).toBeLessThan(2_000)
    expect(busy).toBeLessThan(trafficMs * 0.5)
    expect(median).toBeLessThan(50)
    expect(worst).toBeLessThan(500)
    expect(snapshotMs).toBeLessThan(15_000)
    await second.close()
    await page.close()
  })
})
