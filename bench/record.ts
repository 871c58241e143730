/**
 * Recording for a long time (#40): `toolstorm proxy --record` as a child process under mixed
 * traffic (an agent's runs, each with `x-toolstorm-run`: reads, a shipment that commits and reports
 * its effect, and a model call answered as an event stream; about 1 % of shipments fail on the
 * upstream's side, a 500 after committing or a reset), for `minutes`. Each interval it samples the
 * proxy's CPU (share of one core), RSS, the bytes it wrote to disk (/proc/PID/io `write_bytes`:
 * lines, body files, fsyncs and all) and the cassette's bytes, so "writes ÷ cassette" and CPU over
 * time show whether recording costs what the traffic costs. A first phase runs the same traffic
 * through the proxy without recording, for the CPU it costs to record.
 *
 * Then the offline half on a synthetic 100k-exchange cassette of 25,000 runs: `extract --run` and
 * `inspect --runs` (load, reports, verdicts), against the 2 s load gate of `npm run bench -- cassette`.
 *
 * `npm run bench -- record [--minutes 30]` (`--quick`: 2 minutes).
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { cassetteHeader } from '../src/cassette/format/cassette.js'
import { Cassette } from '../src/cassette/format/cassette.js'
import { extractRuns } from '../src/cassette/format/extract.js'
import { writeLinesAtomic } from '../src/io/write-lines-atomic.js'
import { runLinesOfCassette } from '../src/report/run-lines.js'
import { exchangeAt } from '../test/helpers/cassette-fixtures.js'
import { startChild, type Child } from './processes.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin/toolstorm.js')
const TOKEN = 'bench-record-token-0123456789'
const MiB = 2 ** 20

export interface RecordBenchOptions {
  /** Minutes of recorded traffic. */
  minutes: number
  /** Samples over the recording (the issue asks for one per 5 minutes of 30: 6). */
  samples: number
  /** Runs started per second (the staging agent: 6). */
  runsPerSecond: number
  /** Minutes of the same traffic without recording, first (the CPU recording costs). */
  baselineMinutes: number
}

interface Sample {
  minute: number
  exchanges: number
  cassetteMiB: number
  writtenMiB: number
  writesPerCassetteByte: number
  cpuPercent: number
  rssMiB: number
}

/** The bench's tool and model server: items, shipments (1 % fail after committing), a streamed completion. */
async function startUpstream(): Promise<{ url: string; close: () => Promise<void>; setSidecar: (url: string) => void }> {
  let sidecar = ''
  let shipments = 0
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk))
    req.on('end', async () => {
      if (req.url?.startsWith('/items/')) return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: req.url.slice(7), name: 'Cloud', price: 12.5, stock: { warehouse: 'AMS-01', count: 3 }, tags: ['a', 'b'] }))
      if (req.url === '/ship') {
        const n = ++shipments
        const call = req.headers['x-toolstorm-call']
        if (sidecar && typeof call === 'string') {
          await fetch(`${sidecar}/effects`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'shipment', key: `s-${n}`, call }) }).catch(() => undefined)
        }
        if (n % 200 === 0) return void req.socket.destroy()
        if (n % 200 === 100) return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"db timeout"}')
        return void res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ shipment: n, body: JSON.parse(body || '{}') }))
      }
      // A model call, streamed: a few events with text deltas and usage.
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      for (const word of ['The', ' order', ' shipped', ' today.']) res.write(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: word } }] })}\n\n`)
      res.write(`data: ${JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [], usage: { prompt_tokens: 22, completion_tokens: 7, total_tokens: 29 } })}\n\n`)
      res.end('data: [DONE]\n\n')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setSidecar: (url) => (sidecar = url),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    }),
  }
}

/** One agent run: two reads, a model call, a shipment. */
async function agentRun(base: string, run: string): Promise<void> {
  const headers = { 'x-toolstorm-run': run, 'content-type': 'application/json', authorization: 'Bearer sk-bench-secret-0123456789abcdef' }
  const call = (p: string, body?: unknown) => fetch(base + p, { method: body === undefined ? 'GET' : 'POST', headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) }).then((r) => r.arrayBuffer(), () => undefined)
  await call(`/items/${run}-a`)
  await call(`/items/${run}-b`)
  await call('/v1/chat/completions', { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: `Ship order ${run} to Amsterdam, please.` }] })
  await call('/ship', { order: run, items: [{ sku: 'sku-1', qty: 2 }], note: 'leave at the door' })
}

/** Bytes the process wrote to disk so far (/proc/PID/io). */
function writeBytes(child: Child): number {
  try {
    return Number(/write_bytes:\s+(\d+)/.exec(readFileSync(`/proc/${child.process.pid}/io`, 'utf8'))?.[1] ?? 0)
  } catch {
    return 0
  }
}

async function sizeOf(target: string): Promise<number> {
  try {
    const info = await stat(target)
    if (!info.isDirectory()) return info.size
    let total = 0
    for (const name of await readdir(target)) total += await sizeOf(path.join(target, name))
    return total
  } catch {
    return 0
  }
}

/** Drive `runsPerSecond` runs a second for `ms`; returns how many ran. */
async function traffic(base: string, runsPerSecond: number, ms: number, prefix: string): Promise<number> {
  const end = Date.now() + ms
  const inflight = new Set<Promise<void>>()
  let n = 0
  while (Date.now() < end) {
    const started = Date.now()
    for (let i = 0; i < runsPerSecond; i++) {
      const run = agentRun(base, `${prefix}-${n++}`).finally(() => inflight.delete(run))
      inflight.add(run)
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 - (Date.now() - started))))
  }
  await Promise.all(inflight)
  return n
}

async function startProxy(upstream: string, record: string | null): Promise<{ child: Child; url: string }> {
  const child = await startChild(process.execPath, [BIN, 'proxy', '--target', upstream, '--port', '0', '--admin-port', '0', '--admin-token', TOKEN, '--ready-json', ...(record ? ['--record', record] : [])])
  const ready = JSON.parse(child.firstLine) as { url: string; adminUrl: string }
  return { child, url: ready.url, ...{ adminUrl: ready.adminUrl } } as { child: Child; url: string; adminUrl: string }
}

/** A synthetic cassette of `runs` runs of 4 exchanges each, interleaved as a proxy sees them. */
async function writeManyRuns(file: string, runs: number): Promise<void> {
  const total = runs * 4
  await writeLinesAtomic(file, (function* () {
    yield JSON.stringify({ ...cassetteHeader({ recorded: '2025-01-01T00:00:00.000Z', source: 'proxy' }, total), exchanges: undefined })
    let seq = 0
    // Runs overlap in fours: calls 1–4 of runs r..r+3, then the next four runs.
    for (let base = 0; base < runs; base += 4) {
      for (let call = 1; call <= 4; call++) {
        for (let run = base; run < Math.min(runs, base + 4); run++) {
          seq++
          yield JSON.stringify(exchangeAt(seq, { run: `run-${run}`, call, ordinal: 1, key: '#1', route: `GET /items/${call}`, started: call / 10, ...(run % 997 === 0 && call === 4 ? { response: { status: 500, headers: {}, body: null } } : {}) }))
        }
      }
    }
  })())
}

export async function benchRecord(options: RecordBenchOptions): Promise<Record<string, unknown>> {
  const upstream = await startUpstream()
  const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-record-bench-'))
  try {
    // Baseline: the same traffic, nothing recorded.
    const bare = (await startProxy(upstream.url, null)) as { child: Child; url: string; adminUrl: string }
    upstream.setSidecar(bare.adminUrl)
    const bareCpu = bare.child.cpuMs()
    const bareStarted = performance.now()
    await traffic(bare.url, options.runsPerSecond, options.baselineMinutes * 60_000, 'bare')
    const baselinePercent = ((bare.child.cpuMs() - bareCpu) / (performance.now() - bareStarted)) * 100
    await bare.child.stop()

    const file = path.join(dir, 'staging.jsonl')
    const recorded = (await startProxy(upstream.url, file)) as { child: Child; url: string; adminUrl: string }
    upstream.setSidecar(recorded.adminUrl)
    const samples: Sample[] = []
    const interval = (options.minutes * 60_000) / options.samples
    let runs = 0
    let cpu = recorded.child.cpuMs()
    let at = performance.now()
    const started = at
    for (let i = 0; i < options.samples; i++) {
      runs += await traffic(recorded.url, options.runsPerSecond, interval, `r${i}`)
      const now = performance.now()
      const cpuNow = recorded.child.cpuMs()
      const cassette = (await sizeOf(file)) + (await sizeOf(file.replace(/\.jsonl$/, '.bodies')))
      const written = writeBytes(recorded.child)
      samples.push({
        minute: Math.round(((now - started) / 60_000) * 10) / 10,
        exchanges: runs * 4,
        cassetteMiB: cassette / MiB,
        writtenMiB: written / MiB,
        writesPerCassetteByte: cassette ? written / cassette : 0,
        cpuPercent: ((cpuNow - cpu) / (now - at)) * 100,
        rssMiB: recorded.child.rssBytes() / MiB,
      })
      cpu = cpuNow
      at = now
    }
    await recorded.child.stop()
    const loaded = await Cassette.load(file)

    // The offline half: 100,000 exchanges in 25,000 runs.
    const many = path.join(dir, 'many.jsonl')
    await writeManyRuns(many, 25_000)
    let t = performance.now()
    await Cassette.load(many)
    const loadMs = performance.now() - t
    t = performance.now()
    const cut = await extractRuns(many, { runs: ['run-12345'] })
    const extractMs = performance.now() - t
    t = performance.now()
    const lines = runLinesOfCassette(await Cassette.load(many))
    const inspectRunsMs = performance.now() - t
    const failed = lines.filter((line) => line.verdict === 'failed').length

    const first = samples[0] as Sample
    const last = samples.at(-1) as Sample
    const rows = samples.map((s) => `| ${s.minute} | ${s.exchanges} | ${s.cassetteMiB.toFixed(1)} | ${s.writtenMiB.toFixed(1)} | ${s.writesPerCassetteByte.toFixed(2)} | ${s.cpuPercent.toFixed(1)} | ${s.rssMiB.toFixed(0)} |`)
    const table = [
      `${options.minutes} min of ${options.runsPerSecond} runs/s (4 exchanges each: 2 reads, a streamed model call, a shipment; 1 % of shipments fail upstream), \`toolstorm proxy --record\`, sampled ${options.samples} times. Without recording the proxy used ${baselinePercent.toFixed(1)} % of a core.`,
      '',
      '| minute | exchanges | cassette MiB | written MiB | written ÷ cassette | CPU % of a core | RSS MiB |',
      '|---|---|---|---|---|---|---|',
      ...rows,
      '',
      `Loaded back: ${loaded.exchanges.length} exchanges. Offline on 100,000 exchanges in 25,000 runs: load ${loadMs.toFixed(0)} ms, extract one run ${extractMs.toFixed(0)} ms (${cut.exchanges.length} exchanges), inspect --runs ${inspectRunsMs.toFixed(0)} ms (${failed} failed runs).`,
    ].join('\n')
    return {
      name: 'record',
      options,
      baselinePercent,
      samples,
      loaded: loaded.exchanges.length,
      loadMs,
      extractMs,
      inspectRunsMs,
      table,
      gates: {
        'writes ≤ 2× the cassette bytes': last.writesPerCassetteByte <= 2,
        'recording CPU ≤ 2× the proxy without it (last interval)': last.cpuPercent <= 2 * baselinePercent,
        'CPU flat as the file grows (last interval ≤ 1.5× the first)': last.cpuPercent <= 1.5 * first.cpuPercent,
        'every exchange loads back': loaded.exchanges.length === runs * 4,
        'extract of one run out of 100k within the 2 s load gate': extractMs <= 2000,
        'inspect --runs of 100k in 25,000 runs within the load gate (a load, plus at most 30 %)': inspectRunsMs <= loadMs * 1.3,
      },
    }
  } finally {
    await upstream.close()
    await rm(dir, { recursive: true, force: true })
  }
}
