/**
 * Two builds of the proxy side by side (say main's and a branch's), interleaved on one loopback
 * upstream: every round loads A then B (or B then A, alternating) for the same time, and compares
 * the CPU each proxy process used per request, which depends less than req/s on how much CPU the
 * load generator got on a shared machine. No rules: the pass-through fast path.
 *
 *   node --import tsx bench/proxy-ab.ts <rootA> <rootB> [rounds] [seconds]
 *
 * A root is a directory with bin/toolstorm.js and its dist/ (a copy of the repository's, built).
 */
import path from 'node:path'
import { cannon, median, startChild, startTs, type Child } from './processes.js'

const [rootA, rootB, roundsArg, secondsArg] = process.argv.slice(2)
if (!rootA || !rootB) throw new Error('Usage: bench/proxy-ab.ts <rootA> <rootB> [rounds] [seconds]')
const rounds = Number(roundsArg ?? 10)
const seconds = Number(secondsArg ?? 3)

const upstream = await startTs('bench/upstream.ts')
const upstreamUrl = `http://127.0.0.1:${upstream.firstLine.trim()}`
const start = (root: string) => startChild(process.execPath, [path.join(root, 'bin/toolstorm.js'), 'proxy', '--target', upstreamUrl, '--port', '0', '--admin-port', '0'])
const proxies: Array<{ name: string; child: Child; url: string; cpuUs: Record<string, number[]> }> = []
for (const [name, root] of [['A', rootA], ['B', rootB]] as const) {
  const child = await start(root)
  proxies.push({ name: `${name} ${root}`, child, url: /^toolstorm proxy (\S+) /.exec(child.firstLine)?.[1] as string, cpuUs: {} })
}
try {
  for (const p of proxies) await cannon(`${p.url}/64b`, 10, 1)
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 ? [...proxies].reverse() : proxies
    for (const size of ['64b', '64k']) {
      for (const p of order) {
        await cannon(`${p.url}/${size}`, 50, 0.5)
        const before = p.child.cpuMs()
        const result = await cannon(`${p.url}/${size}`, 50, seconds)
        if (result.errors + result.timeouts + result.non2xx > 0) throw new Error(`${p.name}: ${result.errors} errors, ${result.non2xx} non-2xx`)
        ;(p.cpuUs[size] ??= []).push(((p.child.cpuMs() - before) * 1000) / result.requests.total)
      }
    }
  }
  for (const p of proxies) {
    const cell = (size: string) => `${Math.round(median(p.cpuUs[size] ?? []))} µs/req (${(p.cpuUs[size] ?? []).map(Math.round).join(' ')})`
    console.log(`${p.name}: 64 B ${cell('64b')}; 64 KiB ${cell('64k')}`)
  }
} finally {
  for (const p of proxies) await p.child.stop()
  await upstream.stop()
}
