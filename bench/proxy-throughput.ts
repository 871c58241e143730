/**
 * Proxy overhead, in one run, interleaved (ABAB…), on one loopback upstream:
 * direct, our proxy (no rules), our proxy with a rule set at probability 0, and http-proxy-3.
 * Throughput at c=50 for 64 B and 64 KiB bodies, added p50/p99 latency at c=1, proxy memory.
 * The load generator, the upstream and the proxy share this machine's cores.
 */
import { mkdtemp, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
// @ts-expect-error autocannon ships no types
import autocannon from 'autocannon'
import { median, startChild, type Child } from './processes.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const TSX = path.join(ROOT, 'node_modules/.bin/tsx')
const BIN = path.join(ROOT, 'bin/toolstorm.js')

interface Options {
  rounds: number
  seconds: number
  latencySeconds: number
}

interface Target {
  name: string
  url: string
  child: Child | null
  peakRss: number
}

interface CannonResult {
  requests: { average: number }
  latency: { p50: number; p99: number }
  errors: number
  timeouts: number
  non2xx: number
}

function cannon(url: string, connections: number, seconds: number): Promise<CannonResult> {
  return autocannon({ url, connections, duration: seconds, pipelining: 1 }) as Promise<CannonResult>
}

export async function benchProxyThroughput(options: Options): Promise<Record<string, unknown>> {
  const upstream = await startChild(TSX, [path.join(ROOT, 'bench/upstream.ts')])
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
  const ours = await startChild(process.execPath, [BIN, 'proxy', '--target', upstreamUrl, '--port', '0', '--admin-port', '0'])
  const oursFault0 = await startChild(process.execPath, [BIN, 'proxy', '--target', upstreamUrl, '--port', '0', '--admin-port', '0', '--rules', rules])
  const peer = await startChild(TSX, [path.join(ROOT, 'bench/peers/http-proxy-3.ts'), upstreamUrl])
  const proxyUrl = (child: Child) => /^toolstorm proxy (\S+) /.exec(child.firstLine)?.[1] as string
  const targets: Target[] = [
    { name: 'direct', url: upstreamUrl, child: null, peakRss: 0 },
    { name: 'toolstorm', url: proxyUrl(ours), child: ours, peakRss: 0 },
    { name: 'toolstorm (rules, p=0)', url: proxyUrl(oursFault0), child: oursFault0, peakRss: 0 },
    { name: 'http-proxy-3', url: `http://127.0.0.1:${peer.firstLine.trim()}`, child: peer, peakRss: 0 },
  ]
  const idleRss = Object.fromEntries(targets.map((t) => [t.name, t.child?.rssBytes() ?? 0]))
  const sampler = setInterval(() => {
    for (const t of targets) if (t.child) t.peakRss = Math.max(t.peakRss, t.child.rssBytes())
  }, 250)

  const throughput: Record<string, Record<string, number[]>> = {}
  const latency: Record<string, { p50: number[]; p99: number[] }> = {}
  let errors = 0
  try {
    // Warm-up: JIT and keep-alive pools.
    for (const t of targets) await cannon(`${t.url}/64b`, 10, 1)
    for (let round = 0; round < options.rounds; round++) {
      for (const size of ['64b', '64k']) {
        for (const t of targets) {
          const result = await cannon(`${t.url}/${size}`, 50, options.seconds)
          errors += result.errors + result.timeouts + result.non2xx
          ;((throughput[t.name] ??= {})[size] ??= []).push(result.requests.average)
        }
      }
      for (const t of targets) {
        const result = await cannon(`${t.url}/64b`, 1, options.latencySeconds)
        errors += result.errors + result.timeouts + result.non2xx
        const entry = (latency[t.name] ??= { p50: [], p99: [] })
        entry.p50.push(result.latency.p50)
        entry.p99.push(result.latency.p99)
      }
    }
  } finally {
    clearInterval(sampler)
    await Promise.all([upstream, ours, oursFault0, peer].map((c) => c.stop()))
  }

  const rps = (name: string, size: string) => median(throughput[name]?.[size] ?? [0])
  const rows = targets.map((t) => {
    const row = {
      target: t.name,
      rps64b: Math.round(rps(t.name, '64b')),
      rps64k: Math.round(rps(t.name, '64k')),
      ratioDirect64b: rps(t.name, '64b') / rps('direct', '64b'),
      ratioDirect64k: rps(t.name, '64k') / rps('direct', '64k'),
      ratioPeer64b: rps(t.name, '64b') / rps('http-proxy-3', '64b'),
      ratioPeer64k: rps(t.name, '64k') / rps('http-proxy-3', '64k'),
      p50Ms: median(latency[t.name]?.p50 ?? [0]),
      p99Ms: median(latency[t.name]?.p99 ?? [0]),
      addedP50Ms: median(latency[t.name]?.p50 ?? [0]) - median(latency.direct?.p50 ?? [0]),
      addedP99Ms: median(latency[t.name]?.p99 ?? [0]) - median(latency.direct?.p99 ?? [0]),
      idleRssMiB: idleRss[t.name]! / 2 ** 20,
      peakRssMiB: t.peakRss / 2 ** 20,
    }
    return row
  })
  const lines = [
    '| target | 64 B req/s | 64 KiB req/s | × direct (64 B / 64 KiB) | × http-proxy-3 (64 B / 64 KiB) | c=1 p50 / p99 (added) | RSS idle → peak |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.target} | ${r.rps64b} | ${r.rps64k} | ${r.ratioDirect64b.toFixed(2)} / ${r.ratioDirect64k.toFixed(2)} | ${r.target === 'direct' ? '–' : `${r.ratioPeer64b.toFixed(2)} / ${r.ratioPeer64k.toFixed(2)}`} | ${r.p50Ms} / ${r.p99Ms} ms${r.target === 'direct' ? '' : ` (+${r.addedP50Ms} / +${r.addedP99Ms})`} | ${r.target === 'direct' ? '–' : `${r.idleRssMiB.toFixed(0)} → ${r.peakRssMiB.toFixed(0)} MiB`} |`,
    ),
  ]
  const ours64 = rows.find((r) => r.target === 'toolstorm')!
  const fault0 = rows.find((r) => r.target === 'toolstorm (rules, p=0)')!
  const gates = {
    'toolstorm ≥ 0.35× direct (64 B and 64 KiB)': ours64.ratioDirect64b >= 0.35 && ours64.ratioDirect64k >= 0.35,
    'toolstorm ≥ 1.5× http-proxy-3 (64 B and 64 KiB)': ours64.ratioPeer64b >= 1.5 && ours64.ratioPeer64k >= 1.5,
    'rules at p=0 ≥ 0.35× direct': fault0.ratioDirect64b >= 0.35 && fault0.ratioDirect64k >= 0.35,
    'zero errors': errors === 0,
  }
  return { suite: 'proxy-throughput', options, rows, errors, gates, table: lines.join('\n') }
}
