/**
 * The added latency at c=1, side by side: direct, the TCP relay and one or more builds of the
 * proxy, interleaved on one loopback upstream. Each round times `requests` sequential 64 B round
 * trips per target over one keep-alive connection (after 200 of warm-up) and keeps the p50; the
 * median of the rounds' p50s, and its difference to direct, is printed per target, with the CPU the
 * process in the middle used per request (for direct: the upstream's).
 *
 *   node --import tsx bench/latency-ab.ts [rounds] [requests] <root>...
 *
 * A root is a directory with bin/toolstorm.js and its dist/ (a copy of the repository's, built).
 */
import path from 'node:path'
import { Client } from 'undici'
import { median, startChild, startTs, type Child } from './processes.js'

const [roundsArg, requestsArg, ...roots] = process.argv.slice(2)
if (roots.length === 0) throw new Error('Usage: bench/latency-ab.ts [rounds] [requests] <root>...')
const rounds = Number(roundsArg ?? 5)
const requests = Number(requestsArg ?? 4000)

async function p50Us(url: string): Promise<number> {
  const target = new URL(url)
  const client = new Client(target.origin, { pipelining: 1, keepAliveTimeout: 30_000 })
  const samples: number[] = []
  try {
    for (let i = 0; i < requests + 200; i++) {
      const start = process.hrtime.bigint()
      const { statusCode, body } = await client.request({ path: target.pathname, method: 'GET' })
      await body.dump()
      if (statusCode !== 200) throw new Error(`${url}: ${statusCode}`)
      if (i >= 200) samples.push(Number(process.hrtime.bigint() - start) / 1000)
    }
  } finally {
    await client.close()
  }
  return median(samples)
}

const upstream = await startTs('bench/upstream.ts')
const upstreamUrl = `http://127.0.0.1:${upstream.firstLine.trim()}`
const relay = await startTs('bench/peers/l4-relay.ts', [upstreamUrl])
const targets: Array<{ name: string; url: string; child: Child | null; p50: number[]; cpuUs: number[] }> = [
  { name: 'direct', url: upstreamUrl, child: upstream, p50: [], cpuUs: [] },
  { name: 'TCP relay', url: `http://127.0.0.1:${relay.firstLine.trim()}`, child: relay, p50: [], cpuUs: [] },
]
for (const root of roots) {
  const child = await startChild(process.execPath, [path.join(root, 'bin/toolstorm.js'), 'proxy', '--target', upstreamUrl, '--port', '0', '--admin-port', '0'])
  targets.push({ name: root, url: /^toolstorm proxy (\S+) /.exec(child.firstLine)?.[1] as string, child, p50: [], cpuUs: [] })
}
try {
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 ? [...targets].reverse() : targets
    for (const t of order) {
      const before = t.child!.cpuMs()
      t.p50.push(await p50Us(`${t.url}/64b`))
      t.cpuUs.push(((t.child!.cpuMs() - before) * 1000) / (requests + 200))
    }
  }
  const direct = median(targets[0]!.p50)
  for (const t of targets) {
    const p50 = median(t.p50)
    console.log(`${t.name}: p50 ${Math.round(p50)} µs, added ${Math.round(p50 - direct)} µs (rounds ${t.p50.map(Math.round).join(' ')}); CPU ${Math.round(median(t.cpuUs))} µs per request (${t.child === upstream ? 'the upstream' : 'the process in the middle'}; rounds ${t.cpuUs.map(Math.round).join(' ')})`)
  }
} finally {
  for (const t of targets) if (t.child !== upstream) await t.child?.stop()
  await upstream.stop()
}
