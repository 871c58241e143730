/**
 * `npm run bench -- explore-memory`: what a long search keeps in memory. An agent of 30 routes (10
 * reads, 20 writes: 200 variations with the default table), each answering 16 KiB of JSON, is
 * explored through the library as the CLI does (`explore({ command })`, --jobs 4). Explore's own
 * process is sampled every 50 ms: its peak RSS, and its heap after a full GC once the search
 * ended but before the proxy closed (what the runs left behind). A recording kept whole would
 * grow by the search's exchanges (some 6,000 of 16 KiB); explore keeps a run's exchanges only
 * while it runs, and a failing one's cassette goes to its counterexample's file.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { explore } from '../src/explore/explore.js'

interface Options {
  /** Routes of the agent (10 reads and 20 writes: 200 variations). */
  routes: number
}

const AGENT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'explore-agent.mjs')
const MIB = 1024 * 1024

export async function benchExploreMemory(options: Options): Promise<Record<string, unknown>> {
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const before = process.memoryUsage()
  let peakRss = before.rss
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50)
  let retainedHeap = 0
  const began = performance.now()
  const { result } = await explore({
    command: [process.execPath, AGENT, '--routes', String(options.routes), '--bytes', String(16 * 1024), '--delay', '0'],
    jobs: 4,
    maxOrdinal: 1,
    // Measured once every run ended and before the proxy closes: what the search left behind.
    onProgress: (progress) => {
      if (progress.done !== progress.total) return
      gc?.()
      retainedHeap = process.memoryUsage().heapUsed - before.heapUsed
    },
  })
  clearInterval(sampler)
  const seconds = (performance.now() - began) / 1000
  const exchanges = result.baseline.calls + result.variations.reduce((sum, variation) => sum + variation.calls, 0)
  const table = [
    '| metric | value |',
    '|---|---|',
    `| variations (+ the baseline) | ${result.variations.length} |`,
    `| exchanges recorded, 16 KiB answers | ${exchanges} |`,
    `| RSS before | ${(before.rss / MIB).toFixed(0)} MiB |`,
    `| peak RSS during the search | ${(peakRss / MIB).toFixed(0)} MiB |`,
    `| heap left after the last run (after GC) | ${(retainedHeap / MIB).toFixed(1)} MiB |`,
    `| wall, --jobs 4 | ${seconds.toFixed(1)} s |`,
  ].join('\n')
  return {
    suite: 'explore-memory',
    variations: result.variations.length,
    exchanges,
    rssBeforeMiB: before.rss / MIB,
    peakRssMiB: peakRss / MIB,
    retainedHeapMiB: retainedHeap / MIB,
    seconds,
    table,
    gates: {
      // The answers alone are 94 MiB (more as base64 lines): a recording kept whole shows it. What stays is each variation's report.
      'heap left after a 200-variation search ≤ 32 MiB': retainedHeap / MIB <= 32,
    },
  }
}
