/**
 * Scale out (docs/scale-out.md): one proxy in memory, one proxy with `--state` on a local Redis,
 * and 2 and 3 replicas on that Redis, each a `toolstorm proxy` process. Load: c=20 on 64 B
 * responses, split evenly over the replicas (one autocannon per replica, all at once). Reported:
 * req/s, CPU per request of the proxy processes, Redis scripts per exchange (INFO commandstats;
 * each is one round trip) and the size of the run's merged report (the default run).
 * Redis is Debian's redis-server on a free port, no persistence.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createClient } from 'redis'
import { startRedis } from '../test/helpers/redis-server.js'
import { cannon, median, startChild, startTs, type Child } from './processes.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin/toolstorm.js')
const CONNECTIONS = 20

export interface ScaleOptions {
  rounds: number
  seconds: number
}


/** Scripts Redis ran (EVALSHA, EVAL): one per round trip of the exchange path (the commands inside a script are not round trips). */
async function redisScripts(client: { info(section: string): Promise<unknown> }): Promise<number> {
  const info = String(await client.info('commandstats'))
  let calls = 0
  for (const match of info.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) calls += Number(match[2])
  return calls
}

export async function benchScale(options: ScaleOptions): Promise<Record<string, unknown>> {
  // The tests' Redis: a free port, no persistence, started once it listens.
  const redisServer = await startRedis()
  const redisUrl = redisServer.url
  const redis = createClient({ url: redisUrl })
  await redis.connect()
  const upstream = await startTs('bench/upstream.ts')
  const upstreamUrl = `http://127.0.0.1:${upstream.firstLine.trim()}`
  const proxy = (extra: string[]) => startChild(process.execPath, [BIN, 'proxy', '--target', upstreamUrl, '--port', '0', '--admin-port', '0', '--admin-token', 'bench-token-0123456789', ...extra])
  const setups: Array<{ name: string; replicas: Child[] }> = []
  const rows: Array<Record<string, number | string>> = []
  let errors = 0
  try {
    setups.push({ name: '1 proxy, in memory', replicas: [await proxy([])] })
    for (const count of [1, 2, 3]) {
      const replicas: Child[] = []
      for (let i = 0; i < count; i++) replicas.push(await proxy(['--state', redisUrl, '--state-prefix', `bench${count}`]))
      setups.push({ name: count === 1 ? '1 proxy, --state redis' : `${count} replicas, --state redis`, replicas })
    }
    const urlOf = (child: Child) => /^toolstorm proxy (\S+) /.exec(child.firstLine)?.[1] as string
    const adminOf = (child: Child) => / · admin (\S+)$/.exec(child.firstLine)?.[1] as string
    const samples = new Map<string, { rps: number[]; cpuUs: number[]; commands: number[] }>()
    for (let round = 0; round < options.rounds; round++) {
      for (const setup of setups) {
        const per = Math.max(1, Math.round(CONNECTIONS / setup.replicas.length))
        await Promise.all(setup.replicas.map((child) => cannon(`${urlOf(child)}/64b`, per, 1)))
        const cpuBefore = setup.replicas.reduce((sum, child) => sum + child.cpuMs(), 0)
        const commandsBefore = await redisScripts(redis)
        const results = await Promise.all(setup.replicas.map((child) => cannon(`${urlOf(child)}/64b`, per, options.seconds)))
        // The calls finished last are written just after their responses.
        await new Promise((resolve) => setTimeout(resolve, 200))
        const total = results.reduce((sum, r) => sum + r.requests.total, 0)
        const cpu = setup.replicas.reduce((sum, child) => sum + child.cpuMs(), 0) - cpuBefore
        const commands = (await redisScripts(redis)) - commandsBefore
        for (const r of results) errors += r.errors + r.timeouts + r.non2xx
        const entry = samples.get(setup.name) ?? { rps: [], cpuUs: [], commands: [] }
        entry.rps.push(results.reduce((sum, r) => sum + r.requests.average, 0))
        entry.cpuUs.push((cpu * 1000) / Math.max(1, total))
        entry.commands.push(setup.name.includes('memory') ? 0 : commands / Math.max(1, total))
        samples.set(setup.name, entry)
      }
    }
    for (const setup of setups) {
      const entry = samples.get(setup.name)!
      const report = await fetch(`${adminOf(setup.replicas[0]!)}/report`, { headers: { authorization: 'Bearer bench-token-0123456789' } })
      const bytes = (await report.arrayBuffer()).byteLength
      rows.push({ setup: setup.name, rps: Math.round(median(entry.rps)), cpuUsPerRequest: Math.round(median(entry.cpuUs)), redisScriptsPerExchange: Number(median(entry.commands).toFixed(2)), reportKiB: Math.round(bytes / 1024) })
    }
  } finally {
    for (const setup of setups) for (const child of setup.replicas) await child.stop()
    await upstream.stop()
    await redis.close()
    await redisServer.close()
  }
  const lines = [
    `| setup (c=${CONNECTIONS}, 64 B) | req/s (all replicas) | proxy CPU µs/req | Redis scripts (round trips) per exchange | merged report (one run) |`,
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.setup} | ${r.rps} | ${r.cpuUsPerRequest} | ${r.redisScriptsPerExchange} | ${r.reportKiB} KiB |`),
  ]
  const shared = rows.filter((r) => String(r.setup).includes('redis'))
  const gates = {
    'at most 1.5 Redis round trips per exchange with --state': shared.every((r) => Number(r.redisScriptsPerExchange) <= 1.5),
    'zero errors': errors === 0,
  }
  return { suite: 'scale', options, rows, errors, gates, table: lines.join('\n') }
}
