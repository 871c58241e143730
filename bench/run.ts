/**
 * `npm run bench [-- suite…] [--quick]`: speed and memory targets live here, not in timed tests.
 * Results go to stdout (markdown) and bench/results/latest.json.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { benchCassette } from './cassette.js'
import { benchDashboard } from './dashboard.js'
import { benchExplore } from './explore.js'
import { benchMcpRouting } from './mcp-routing.js'
import { benchMcpStdio } from './mcp-stdio.js'
import { benchPipelining } from './pipelining.js'
import { benchProxyThroughput } from './proxy-throughput.js'
import { benchScale } from './scale.js'
import { benchSoak } from './soak.js'
import { benchRecord } from './record.js'
import { benchTls } from './tls.js'

const args = process.argv.slice(2)
const quick = args.includes('--quick')
// `--minutes N`: how long `record` records (default 30; 2 with --quick).
const minutesAt = args.indexOf('--minutes')
const minutes = minutesAt >= 0 ? Number(args[minutesAt + 1]) : undefined
if (minutes !== undefined && !(minutes > 0)) throw new Error(`--minutes: expected a positive number, got ${JSON.stringify(args[minutesAt + 1])}`)
const wanted = args.filter((a, index) => !a.startsWith('--') && (minutesAt < 0 || index !== minutesAt + 1))
const suites: Record<string, () => Promise<Record<string, unknown>>> = {
  proxy: () => benchProxyThroughput(quick ? { rounds: 2, seconds: 2, latencyRequests: 500, warmupSeconds: 1 } : { rounds: 6, seconds: 4, latencyRequests: 2_000, warmupSeconds: 1 }),
  tls: () => benchTls(quick ? { rounds: 1, seconds: 2, concurrency: 16, coldHosts: 20 } : { rounds: 3, seconds: 5, concurrency: 16, coldHosts: 100 }),
  cassette: () => benchCassette(quick ? { rounds: 1, lookups: 5_000 } : { rounds: 3, lookups: 20_000 }),
  pipelining: () => benchPipelining(quick ? { requests: 2_000, stallMs: 2_000 } : { requests: 5_000, stallMs: 4_000 }),
  scale: () => benchScale(quick ? { rounds: 1, seconds: 2 } : { rounds: 3, seconds: 4 }),
  mcp: () => benchMcpRouting(quick ? { rounds: 1, seconds: 2, connections: 10 } : { rounds: 3, seconds: 3, connections: 10 }),
  'mcp-stdio': () => benchMcpStdio(quick ? { rounds: 2, calls: 500, starts: 3 } : { rounds: 5, calls: 2_000, starts: 10 }),
  dashboard: () => benchDashboard(quick ? { rounds: 1, exchanges: 5_000 } : { rounds: 3, exchanges: 10_000 }),
  explore: () => benchExplore(quick ? { rounds: 1 } : { rounds: 3 }),
  soak: () => benchSoak(quick ? { rounds: 3, requests: 10_000 } : { rounds: 6, requests: 50_000 }),
  record: () => benchRecord({ minutes: minutes ?? (quick ? 2 : 30), samples: 6, runsPerSecond: 6, baselineMinutes: quick ? 0.5 : 2 }),
}

const results: Record<string, unknown>[] = []
for (const [name, run] of Object.entries(suites)) {
  if (wanted.length && !wanted.includes(name)) continue
  console.log(`\n## ${name}\n`)
  const result = await run()
  results.push(result)
  console.log(result.table)
  for (const [gate, ok] of Object.entries(result.gates as Record<string, boolean>)) console.log(`${ok ? 'PASS' : 'FAIL'}  ${gate}`)
}
await mkdir(new URL('./results/', import.meta.url), { recursive: true })
await writeFile(new URL('./results/latest.json', import.meta.url), JSON.stringify({ date: new Date().toISOString(), node: process.version, results }, null, 2))
