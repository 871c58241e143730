/**
 * Proxy overhead, in one run, interleaved (every round runs every target back to back), on one
 * loopback upstream: direct, our proxy (no rules), our proxy with a rule set at probability 0,
 * http-proxy-3 (the peer), and two references: a minimal node:http + undici forwarder and a TCP
 * relay with no HTTP parsing (the floor), and mockttp (a mocking proxy many suites put in front of
 * their upstreams). Throughput at c=50 for 64 B and 64 KiB bodies, added
 * p50/p99 latency at c=1, proxy memory.
 *
 * The load generator, the upstream and the proxies share this machine's two cores, and a VM's
 * speed drifts from minute to minute: ratios are computed within each round, where every target
 * ran under the same conditions, and the median over rounds is reported.
 */
import { mkdtemp, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from 'undici'
import { cannon, median, startChild, startTs, type Child } from './processes.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin/toolstorm.js')

export interface ThroughputOptions {
  rounds: number
  seconds: number
  /** Sequential requests per target and round for the c=1 latency (after a warm-up). */
  latencyRequests: number
  /** Unmeasured load on the same target and size right before each measured run. */
  warmupSeconds: number
}

interface Target {
  name: string
  url: string
  child: Child | null
  peakRss: number
  reference?: boolean
}


/**
 * c=1 round trips timed one by one with hrtime over one keep-alive connection (autocannon reports
 * whole milliseconds, and a proxy adds tens of microseconds). Same client for every target.
 */
async function sequentialLatencyUs(url: string, requests: number): Promise<{ p50: number; p99: number; errors: number }> {
  const target = new URL(url)
  const client = new Client(target.origin, { pipelining: 1, keepAliveTimeout: 30_000 })
  const samples: number[] = []
  let errors = 0
  try {
    for (let i = 0; i < requests + 200; i++) {
      const start = process.hrtime.bigint()
      try {
        const { statusCode, body } = await client.request({ path: target.pathname, method: 'GET' })
        await body.dump()
        if (statusCode !== 200) errors++
      } catch {
        errors++
      }
      if (i >= 200) samples.push(Number(process.hrtime.bigint() - start) / 1000)
    }
  } finally {
    await client.close()
  }
  samples.sort((a, b) => a - b)
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))] as number
  return { p50: at(0.5), p99: at(0.99), errors }
}

const SIZES = ['64b', '64k'] as const

export async function benchProxyThroughput(options: ThroughputOptions): Promise<Record<string, unknown>> {
  const upstream = await startTs('bench/upstream.ts')
  const upstreamUrl = `http://127.0.0.1:${upstream.firstLine.trim()}`
  const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-bench-'))
  const rules = path.join(dir, 'fault0.json')
  await writeFile(
    rules,
    JSON.stringify({
      seed: 1,
      routes: { small: 'GET /64b', large: 'GET /64k' },
      rules: ['small', 'large', 'GET /other/*', '*'].flatMap((route, i) => [
        { name: `lost-${i}`, route, kind: 'response_lost', probability: 0 },
        { name: `busy-${i}`, route, kind: 'rate_limit', probability: 0, delay: 1 },
        { name: `drift-${i}`, route, kind: 'schema_drift', probability: 0 },
      ]),
    }),
  )
  const children = {
    ours: await startChild(process.execPath, [BIN, 'proxy', '--target', upstreamUrl, '--port', '0', '--admin-port', '0']),
    fault0: await startChild(process.execPath, [BIN, 'proxy', '--target', upstreamUrl, '--port', '0', '--admin-port', '0', '--rules', rules]),
    peer: await startTs('bench/peers/http-proxy-3.ts', [upstreamUrl]),
    mockttp: await startTs('bench/peers/mockttp.ts', [upstreamUrl]),
    minimal: await startTs('bench/peers/minimal-forwarder.ts', [upstreamUrl]),
    relay: await startTs('bench/peers/l4-relay.ts', [upstreamUrl]),
  }
  const proxyUrl = (child: Child) => /^toolstorm proxy (\S+) /.exec(child.firstLine)?.[1] as string
  const port = (child: Child) => `http://127.0.0.1:${child.firstLine.trim()}`
  const targets: Target[] = [
    { name: 'direct', url: upstreamUrl, child: null, peakRss: 0 },
    { name: 'toolstorm', url: proxyUrl(children.ours), child: children.ours, peakRss: 0 },
    { name: 'toolstorm (rules, p=0)', url: proxyUrl(children.fault0), child: children.fault0, peakRss: 0 },
    { name: 'http-proxy-3', url: port(children.peer), child: children.peer, peakRss: 0 },
    { name: 'mockttp', url: port(children.mockttp), child: children.mockttp, peakRss: 0 },
    { name: 'minimal node:http+undici forwarder', url: port(children.minimal), child: children.minimal, peakRss: 0, reference: true },
    { name: 'TCP relay (no HTTP parsing)', url: port(children.relay), child: children.relay, peakRss: 0, reference: true },
  ]
  const idleRss = Object.fromEntries(targets.map((t) => [t.name, t.child?.rssBytes() ?? 0]))
  const sampler = setInterval(() => {
    for (const t of targets) if (t.child) t.peakRss = Math.max(t.peakRss, t.child.rssBytes())
  }, 250)

  const rps: Record<string, Record<string, number[]>> = {}
  // CPU per request of the process in the middle (the upstream's for direct): steadier than req/s
  // on a shared VM, since it does not depend on how much CPU the load generator got.
  const cpuUs: Record<string, Record<string, number[]>> = {}
  const ratioDirect: Record<string, Record<string, number[]>> = {}
  const ratioPeer: Record<string, Record<string, number[]>> = {}
  const ratioMockttp: Record<string, Record<string, number[]>> = {}
  const latency: Record<string, { p50: number[]; p99: number[] }> = {}
  let errors = 0
  const push = (table: Record<string, Record<string, number[]>>, name: string, size: string, value: number) => ((table[name] ??= {})[size] ??= []).push(value)
  try {
    for (const t of targets) await cannon(`${t.url}/64b`, 10, 1)
    for (let round = 0; round < options.rounds; round++) {
      // Each round starts at another target, so none always runs right after direct.
      const order = targets.map((_, i) => targets[(i + round) % targets.length] as Target)
      for (const size of SIZES) {
        const results: Record<string, number> = {}
        for (const t of order) {
          const measured = t.child ?? upstream
          // Each target sat idle while the others ran (≈ 25 s): its keep-alive sockets were closed
          // (and the peers' heaps shrunk: docs/benchmarks.md, step 5). Measure it serving, not waking up.
          const warm = await cannon(`${t.url}/${size}`, 50, options.warmupSeconds)
          errors += warm.errors + warm.timeouts + warm.non2xx
          const cpuBefore = measured.cpuMs()
          const result = await cannon(`${t.url}/${size}`, 50, options.seconds)
          if (result.requests.total > 0) push(cpuUs, t.name, size, ((measured.cpuMs() - cpuBefore) * 1000) / result.requests.total)
          errors += result.errors + result.timeouts + result.non2xx
          results[t.name] = result.requests.average
          push(rps, t.name, size, result.requests.average)
        }
        for (const t of targets) {
          push(ratioDirect, t.name, size, (results[t.name] as number) / (results.direct as number))
          push(ratioPeer, t.name, size, (results[t.name] as number) / (results['http-proxy-3'] as number))
          push(ratioMockttp, t.name, size, (results[t.name] as number) / (results.mockttp as number))
        }
      }
      for (const t of targets) {
        const result = await sequentialLatencyUs(`${t.url}/64b`, options.latencyRequests)
        errors += result.errors
        const entry = (latency[t.name] ??= { p50: [], p99: [] })
        entry.p50.push(result.p50)
        entry.p99.push(result.p99)
      }
    }
  } finally {
    clearInterval(sampler)
    await Promise.all([upstream, ...Object.values(children)].map((c) => c.stop()))
  }

  const m = (table: Record<string, Record<string, number[]>>, name: string, size: string) => median(table[name]?.[size] ?? [0])
  const rows = targets.map((t) => ({
    target: t.name,
    reference: t.reference === true,
    rps64b: Math.round(m(rps, t.name, '64b')),
    rps64k: Math.round(m(rps, t.name, '64k')),
    ratioDirect64b: m(ratioDirect, t.name, '64b'),
    ratioDirect64k: m(ratioDirect, t.name, '64k'),
    ratioPeer64b: m(ratioPeer, t.name, '64b'),
    ratioPeer64k: m(ratioPeer, t.name, '64k'),
    ratioMockttp64b: m(ratioMockttp, t.name, '64b'),
    ratioMockttp64k: m(ratioMockttp, t.name, '64k'),
    cpuUs64b: Math.round(m(cpuUs, t.name, '64b')),
    cpuUs64k: Math.round(m(cpuUs, t.name, '64k')),
    p50Us: Math.round(median(latency[t.name]?.p50 ?? [0])),
    p99Us: Math.round(median(latency[t.name]?.p99 ?? [0])),
    idleRssMiB: (idleRss[t.name] ?? 0) / 2 ** 20,
    peakRssMiB: t.peakRss / 2 ** 20,
  }))
  const direct = rows[0]!
  const fmt = (n: number) => n.toFixed(2)
  const lines = [
    '| target | 64 B req/s | 64 KiB req/s | × direct (64 B / 64 KiB) | × http-proxy-3 (64 B / 64 KiB) | × mockttp (64 B / 64 KiB) | CPU µs/req (64 B / 64 KiB) | c=1 p50 / p99 µs (added) | RSS idle → peak |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.reference ? `*${r.target}*` : r.target} | ${r.rps64b} | ${r.rps64k} | ${fmt(r.ratioDirect64b)} / ${fmt(r.ratioDirect64k)} | ${r.target === 'direct' ? '–' : `${fmt(r.ratioPeer64b)} / ${fmt(r.ratioPeer64k)}`} | ${r.target === 'direct' ? '–' : `${fmt(r.ratioMockttp64b)} / ${fmt(r.ratioMockttp64k)}`} | ${r.cpuUs64b} / ${r.cpuUs64k}${r.target === 'direct' ? ' (upstream)' : ''} | ${r.p50Us} / ${r.p99Us}${r.target === 'direct' ? '' : ` (+${r.p50Us - direct.p50Us} / +${r.p99Us - direct.p99Us})`} | ${r.target === 'direct' ? '–' : `${r.idleRssMiB.toFixed(0)} → ${r.peakRssMiB.toFixed(0)} MiB`} |`,
    ),
  ]
  const ours = rows.find((r) => r.target === 'toolstorm')!
  const fault0 = rows.find((r) => r.target === 'toolstorm (rules, p=0)')!
  const gates = {
    'toolstorm ≥ 0.5× direct (64 B and 64 KiB)': ours.ratioDirect64b >= 0.5 && ours.ratioDirect64k >= 0.5,
    'toolstorm ≥ 2× every peer (http-proxy-3, mockttp; 64 B and 64 KiB)': Math.min(ours.ratioPeer64b, ours.ratioPeer64k, ours.ratioMockttp64b, ours.ratioMockttp64k) >= 2,
    'rules at p=0 ≥ 0.35× direct (64 B and 64 KiB)': fault0.ratioDirect64b >= 0.35 && fault0.ratioDirect64k >= 0.35,
    'toolstorm adds ≤ 0.1 ms p50 and ≤ 2 ms p99 at c=1': ours.p50Us - direct.p50Us <= 100 && ours.p99Us - direct.p99Us <= 2000,
    'zero errors': errors === 0,
  }
  return { suite: 'proxy-throughput', options, rows, errors, gates, table: lines.join('\n') }
}
