/**
 * The dashboard under 10,000 live exchanges, shared by its UI test (structure: virtualised rows,
 * batched renders, a snapshot for a late page) and `npm run bench -- dashboard` (the frame and
 * main-thread timings, which belong in a benchmark rather than a timed test).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Agent, request } from 'undici'
import { startUpstream, type Upstream } from '../helpers/upstream.js'
import { launchChromium, type LaunchedBrowser } from './browser.js'
import { startCli, type RunningCli } from './spawn-cli.js'

// Browser globals used inside page.evaluate callbacks: the Node type-check has no DOM lib.
declare const document: any, window: any, requestAnimationFrame: (callback: () => void) => number
type HTMLElement = any

const CONCURRENCY = 24

export interface DashboardLoad {
  exchanges: number
  trafficMs: number
  caughtUpMs: number
  /** Times the stats line changed while the traffic flowed: one per render of the page. */
  renders: number
  longestTaskMs: number
  longTasks: number
  busyMs: number
  rowsInDom: number
  scrollFrameMedianMs: number
  scrollFrameWorstMs: number
  /** Row ids in view after scrolling to row 5,000. */
  idsAfterJump: number[]
  snapshotMs: number
}

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

/** Starts an upstream, a proxy with a flaky rule and Chromium; sends `exchanges` calls while a page watches. */
export async function measureDashboardLoad(exchanges: number): Promise<DashboardLoad> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-dashboard-scale-'))
  let upstream: Upstream | undefined
  let proxy: RunningCli | undefined
  let chromium: LaunchedBrowser | undefined
  try {
    upstream = await startUpstream()
    const rules = path.join(dir, 'rules.json')
    await writeFile(rules, JSON.stringify({ seed: 3, rules: [{ name: 'flaky', route: 'GET /items/*', kind: 'unavailable', probability: 0.1 }] }))
    proxy = await startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--rules', rules, '--print-admin-token'], 3)
    chromium = await launchChromium()
    const proxyUrl = /^toolstorm proxy (\S+) /.exec(proxy.lines[0] as string)?.[1] as string
    const dashboardUrl = /^dashboard: (\S+)$/.exec(proxy.lines[2] as string)?.[1] as string
    const page = await chromium.browser.newPage({ viewport: { width: 1400, height: 900 } })
    await page.goto(dashboardUrl)
    await page.locator('.connection:has-text("Live")').waitFor()
    // Every main-thread task over 50 ms, and every change of the stats line (one per render).
    await page.evaluate(() => {
      const watch = { longTasks: [] as number[], renders: 0 }
      window.watch = watch
      new window.PerformanceObserver((list: any) => list.getEntries().forEach((entry: any) => watch.longTasks.push(entry.duration))).observe({ type: 'longtask', buffered: false })
      const stats = document.querySelector('[data-testid="stats"]')
      new window.MutationObserver(() => watch.renders++).observe(stats, { subtree: true, childList: true, characterData: true })
    })

    const started = performance.now()
    await sendMany(proxyUrl, exchanges)
    const trafficMs = performance.now() - started
    await page.locator(`[data-testid="stats"]:has-text("${exchanges} calls")`).waitFor({ timeout: 60_000 })
    const caughtUpMs = performance.now() - started - trafficMs
    const watch = (await page.evaluate(() => window.watch)) as { longTasks: number[]; renders: number }
    const rowsInDom = await page.locator('.exchange-row').count()

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

    // A second dashboard opening on the full run gets it in one snapshot.
    const opened = performance.now()
    const second = await chromium.browser.newPage({ viewport: { width: 1400, height: 900 } })
    await second.goto(dashboardUrl)
    await second.locator(`[data-testid="stats"]:has-text("${exchanges} calls")`).waitFor({ timeout: 60_000 })
    const snapshotMs = performance.now() - opened
    await second.close()
    await page.close()
    return {
      exchanges,
      trafficMs,
      caughtUpMs,
      renders: watch.renders,
      longestTaskMs: Math.max(0, ...watch.longTasks),
      longTasks: watch.longTasks.length,
      busyMs: watch.longTasks.reduce((sum, duration) => sum + duration, 0),
      rowsInDom,
      scrollFrameMedianMs: frames.times[Math.floor(frames.times.length / 2)] as number,
      scrollFrameWorstMs: frames.times[frames.times.length - 1] as number,
      idsAfterJump: frames.ids,
      snapshotMs,
    }
  } finally {
    await chromium?.close()
    await proxy?.stop()
    await upstream?.close()
    await rm(dir, { recursive: true, force: true })
  }
}
