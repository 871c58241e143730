/**
 * Soak (#31): `toolstorm proxy` in reverse mode under the mixed-fault load that made it grow
 * without bound: autocannon c=20 alternating `GET /inventory/…` and `POST /shipments`, `reset` at
 * p=0.05 on the GETs and `response_lost` at p=0.1 on the POSTs, with a dashboard subscriber that
 * stopped reading (`GET /events`, never read). A fixed number of requests per round; after each
 * round the proxy's heap in use after a full GC (bench/heap-probe.mjs) and its RSS. The first
 * round is the baseline (JIT, pools and the run's itemized calls fill up in it). Ends with SIGTERM:
 * the proxy must exit within its grace with its report written.
 */
import { once } from 'node:events'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
// @ts-expect-error autocannon ships no types
import autocannon from 'autocannon'
import { startChild, startTs } from './processes.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin/toolstorm.js')
const TOKEN = 'bench-soak-token-0123456789'
const CONNECTIONS = 20
/** Heap in use after GC may grow this much from the first round to the last. */
const HEAP_GROWTH_BOUND_MIB = 4
/** The proxy's close grace (src/proxy/server-pair.ts), and room for a loaded machine. */
const EXIT_BOUND_MS = 2_000 + 3_000

export interface SoakOptions {
  rounds: number
  /** Requests per round (half GETs, half POSTs). */
  requests: number
}

interface Memory {
  heapUsed: number
  rss: number
  gc: boolean
}

const MiB = 2 ** 20

export async function benchSoak(options: SoakOptions): Promise<Record<string, unknown>> {
  const upstream = await startTs('bench/upstream.ts')
  const upstreamUrl = `http://127.0.0.1:${upstream.firstLine.trim()}`
  const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-soak-'))
  const rules = path.join(dir, 'rules.json')
  const reportFile = path.join(dir, 'report.json')
  await writeFile(
    rules,
    JSON.stringify({
      seed: 31,
      routes: { inventory: 'GET /inventory/*', shipments: 'POST /shipments' },
      rules: [
        { name: 'reset-inventory', route: 'inventory', kind: 'reset', probability: 0.05 },
        { name: 'lost-shipment', route: 'shipments', kind: 'response_lost', probability: 0.1 },
      ],
    }),
  )
  const proxy = await startChild(
    process.execPath,
    ['--expose-gc', '--import', path.join(ROOT, 'bench/heap-probe.mjs'), BIN, 'proxy', '--target', upstreamUrl, '--port', '0', '--admin-port', '0', '--admin-token', TOKEN, '--rules', rules, '--report', reportFile],
    { ipc: true },
  )
  const url = /^toolstorm proxy (\S+) /.exec(proxy.firstLine)?.[1] as string
  const adminUrl = new URL(/ · admin (\S+)$/.exec(proxy.firstLine)?.[1] as string)
  const memory = async (): Promise<Memory> => {
    const answer = once(proxy.process, 'message')
    proxy.process.send?.('heap')
    return (await answer)[0] as Memory
  }

  // A dashboard subscriber that stops reading: whatever the proxy queues for it stays queued.
  const subscriber = net.connect(Number(adminUrl.port), adminUrl.hostname, () => subscriber.write(`GET /events HTTP/1.1\r\nhost: ${adminUrl.host}\r\nauthorization: Bearer ${TOKEN}\r\n\r\n`))
  subscriber.on('error', () => undefined)
  subscriber.pause()

  const rows: Array<{ round: number; requests: number; resets: number; heapMiB: number; rssMiB: number }> = []
  let sent = 0
  let exit: { code: number | null; ms: number } = { code: null, ms: Infinity }
  let report: { calls: unknown[]; droppedCalls: number } | null
  try {
    for (let round = 1; round <= options.rounds; round++) {
      const result = (await autocannon({
        url,
        connections: CONNECTIONS,
        amount: options.requests,
        requests: [
          { method: 'GET', path: `/inventory/sku-${round}` },
          { method: 'POST', path: '/shipments', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order: `o-${round}` }) },
        ],
      })) as { requests: { total: number }; errors: number }
      sent += result.requests.total + result.errors
      // The last exchanges finish just after autocannon stops.
      await new Promise((resolve) => setTimeout(resolve, 500))
      const measured = await memory()
      if (!measured.gc) throw new Error('the proxy has no gc(): run it with --expose-gc')
      rows.push({ round, requests: result.requests.total, resets: result.errors, heapMiB: measured.heapUsed / MiB, rssMiB: proxy.rssBytes() / MiB })
    }
  } finally {
    const started = performance.now()
    const exited = once(proxy.process, 'exit')
    proxy.process.kill('SIGTERM')
    const code = await Promise.race([exited.then(([c]) => c as number | null), new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), EXIT_BOUND_MS + 5_000))])
    if (code === 'timeout') proxy.process.kill('SIGKILL')
    else exit = { code, ms: performance.now() - started }
    subscriber.destroy()
    await upstream.stop()
    report = await readFile(reportFile, 'utf8')
      .then((text) => JSON.parse(text) as { calls: unknown[]; droppedCalls: number })
      .catch(() => null)
    await rm(dir, { recursive: true, force: true })
  }

  const first = rows[0]!
  const last = rows[rows.length - 1]!
  const growth = last.heapMiB - first.heapMiB
  const recorded = report ? report.calls.length + report.droppedCalls : 0
  const lines = [
    `| round | requests (c=${CONNECTIONS}) | client errors (resets) | heap after GC (MiB) | RSS (MiB) |`,
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.round} | ${r.requests} | ${r.resets} | ${r.heapMiB.toFixed(1)} | ${r.rssMiB.toFixed(0)} |`),
    '',
    `Heap after GC, round 1 → ${last.round}: ${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MiB. SIGTERM: exit ${exit.code} after ${Number.isFinite(exit.ms) ? `${Math.round(exit.ms)} ms` : 'never (killed)'}; report ${report ? `written, ${recorded} calls` : 'missing'}.`,
  ]
  const gates = {
    [`heap after GC grows ≤ ${HEAP_GROWTH_BOUND_MIB} MiB from round 1 to round ${last.round}`]: growth <= HEAP_GROWTH_BOUND_MIB,
    [`exits 0 within ${EXIT_BOUND_MS / 1000} s of SIGTERM`]: exit.code === 0 && exit.ms <= EXIT_BOUND_MS,
    // Every request the proxy parsed is a call, answered or reset.
    'the report is written and counts every request sent': report !== null && recorded >= sent * 0.99 && recorded <= sent + CONNECTIONS,
  }
  return { suite: 'soak', options, rows, growthMiB: growth, exit, reportedCalls: recorded, sent, gates, table: lines.join('\n') }
}
