/**
 * Large cassettes: a synthetic cassette of 10k and 100k exchanges (varied methods, paths,
 * queries and JSON bodies), measured for load time (streamed, strictly validated), heap after
 * load, index build, and replay lookup latency (hit lookups in recorded order and in any order),
 * with a Polly-style linear scan as the baseline. Lookups must stay flat as the cassette grows.
 * Then large bodies: the same cassette of 1 MiB bodies with every body inline in its line (as
 * cassettes were written before body files) and with them in body files beside it.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Cassette, cassetteHeader } from '../src/cassette/format/cassette.js'
import { ReplaySession } from '../src/cassette/replay/replay-session.js'
import type { StoredBody } from '../src/cassette/format/cassette-schema.js'
import { writeLinesAtomic } from '../src/io/write-lines-atomic.js'
import { exchangeAt } from '../test/helpers/cassette-fixtures.js'
import { median } from './processes.js'

interface Options {
  /** Load rounds per size (median reported). */
  rounds: number
  /** Lookups timed per size and order. */
  lookups: number
}

const ROUTES = [
  { method: 'GET', route: 'GET /v1/items/:id', url: (i: number) => `/v1/items/sku-${i}?page=${i % 7}&expand=stock` },
  { method: 'POST', route: 'POST /v1/orders', url: (i: number) => `/v1/orders?idempotency=${i}` },
  { method: 'GET', route: 'GET /v1/search', url: (i: number) => `/v1/search?q=term-${i % 977}&limit=20&offset=${i}` },
  { method: 'POST', route: 'POST /v1/chat/completions', url: () => '/v1/chat/completions' },
] as const

/** One synthetic exchange line, as the recorder writes it. */
function exchangeLine(seq: number, ordinals: Map<string, number>): string {
  const spec = ROUTES[seq % ROUTES.length] as (typeof ROUTES)[number]
  const ordinal = (ordinals.get(spec.route) ?? 0) + 1
  ordinals.set(spec.route, ordinal)
  const requestBody =
    spec.method === 'POST' ? JSON.stringify(spec.route.includes('chat') ? { model: 'gpt-test', messages: [{ role: 'user', content: `question ${seq}: where is order ${seq * 7}?` }], temperature: 0 } : { order: `o-${seq}`, items: [{ sku: `sku-${seq % 100}`, qty: (seq % 5) + 1 }], note: 'leave at the door' }) : null
  const responseBody = JSON.stringify({ id: `r-${seq}`, status: 'ok', items: [{ sku: `sku-${seq % 100}`, name: 'Cloud', price: 12.5, tags: ['a', 'b'] }], text: 'lorem ipsum dolor sit amet '.repeat(6) })
  const body = (data: string) => ({ encoding: 'utf8', data, size: Buffer.byteLength(data), truncated: false })
  return JSON.stringify({
    seq,
    run: 'default',
    call: seq,
    route: spec.route,
    ordinal,
    key: `#${ordinal}`,
    parent: null,
    started: seq / 1000,
    elapsed: 0.004,
    request: { method: spec.method, url: spec.url(seq), headers: { accept: 'application/json', 'user-agent': 'bench-agent/1.0', ...(requestBody ? { 'content-type': 'application/json', 'content-length': String(requestBody.length) } : {}) }, body: requestBody ? body(requestBody) : null },
    outcome: 'response',
    response: { status: 200, headers: { 'content-type': 'application/json', 'content-length': String(responseBody.length), date: 'Mon, 01 Jan 2025 00:00:00 GMT' }, body: body(responseBody) },
    upstream: null,
    executed: true,
    fault: null,
    retryAfter: null,
    error: null,
    effects: spec.method === 'POST' ? [{ name: 'order', key: `o-${seq}`, at: seq / 1000 + 0.002, identity: Math.ceil(seq / 2), redacted: false }] : [],
  })
}

export async function writeSynthetic(file: string, exchanges: number): Promise<void> {
  const ordinals = new Map<string, number>()
  await writeLinesAtomic(file, (function* () {
    yield JSON.stringify(cassetteHeader({ recorded: '2025-01-01T00:00:00.000Z', source: 'proxy' }, exchanges))
    for (let seq = 1; seq <= exchanges; seq++) yield exchangeLine(seq, ordinals)
  })())
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

function gc(): void {
  ;(globalThis as { gc?: () => void }).gc?.()
}

interface SizeResult {
  exchanges: number
  fileMiB: number
  loadMs: number
  heapMiB: number
  indexMs: number
  strictP50Us: number
  strictP99Us: number
  anyP50Us: number
  anyP99Us: number
  linearP99Us: number | null
  normaliseP50Us: number
  /** Any order with every normaliser on (`--normalize ids,timestamps,uuids`): index build, lookups, per-request normalisation. */
  normalisedIndexMs: number
  normalisedP50Us: number
  normalisedP99Us: number
  normalisedNormaliseP50Us: number
}

/** Requests for `positions` normalised (timed), then decided (timed): every one must be served. */
async function timeLookups(loaded: Cassette, session: ReplaySession, positions: readonly number[]): Promise<{ lookups: number[]; normalise: number[] }> {
  const seen = []
  const normalise: number[] = []
  for (const position of positions) {
    const exchange = loaded.exchanges[position] as Cassette['exchanges'][number]
    const t = performance.now()
    seen.push(await session.normalise({ method: exchange.request.method, url: exchange.request.url, headers: exchange.request.headers, body: exchange.request.body ? Buffer.from(exchange.request.body.data) : null }))
    normalise.push((performance.now() - t) * 1000)
  }
  const lookups: number[] = []
  for (const view of seen) {
    const t = performance.now()
    const decision = session.decideNormalised(session.begin(), view)
    lookups.push((performance.now() - t) * 1000)
    if (decision.type !== 'serve') throw new Error(`${session.order}-order lookup missed`)
  }
  return { lookups, normalise }
}

async function measure(file: string, exchanges: number, options: Options): Promise<SizeResult> {
  const loads: number[] = []
  const held: { cassette: Cassette | null } = { cassette: null }
  let heap = 0
  for (let round = 0; round < options.rounds; round++) {
    // Drop the previous round's cassette so the heap figure is this load's alone.
    held.cassette = null
    // The read stream closes a turn later; until then the previous load's state is reachable.
    await new Promise((resolve) => setTimeout(resolve, 50))
    gc()
    const before = process.memoryUsage().heapUsed
    const started = performance.now()
    held.cassette = await Cassette.load(file)
    loads.push(performance.now() - started)
    await new Promise((resolve) => setTimeout(resolve, 50))
    gc()
    heap = process.memoryUsage().heapUsed - before
  }
  const loaded = held.cassette as Cassette
  // A strict session indexes nothing up front (it compares each request with the next position).
  const strict = new ReplaySession(loaded)

  // Requests normalised up front (redaction and digests cost the same at any size); timed separately.
  const count = Math.min(options.lookups, exchanges)
  const normaliseTimes: number[] = []
  const seen = []
  for (let i = 0; i < count; i++) {
    const exchange = loaded.exchanges[i] as Cassette['exchanges'][number]
    const t = performance.now()
    seen.push(await strict.normalise({ method: exchange.request.method, url: exchange.request.url, headers: exchange.request.headers, body: exchange.request.body ? Buffer.from(exchange.request.body.data) : null }))
    normaliseTimes.push((performance.now() - t) * 1000)
  }
  const strictTimes: number[] = []
  for (let i = 0; i < count; i++) {
    const t = performance.now()
    const decision = strict.decideNormalised(strict.begin(), seen[i]!)
    strictTimes.push((performance.now() - t) * 1000)
    if (decision.type !== 'serve') throw new Error(`strict lookup ${i} missed`)
  }

  // Any order: requests for positions spread over the whole cassette, shuffled. Its index is built up front.
  const started = performance.now()
  const any = new ReplaySession(loaded, { order: 'any' })
  const indexMs = performance.now() - started
  const step = Math.max(1, Math.floor(exchanges / count))
  const positions = Array.from({ length: count }, (_, i) => i * step)
  for (let i = positions.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1))
    ;[positions[i], positions[j]] = [positions[j] as number, positions[i] as number]
  }
  const { lookups: anyTimes } = await timeLookups(loaded, any, positions)

  // The same in any order with every normaliser on: they cost at index build and per request, never per lookup.
  const normalisedStarted = performance.now()
  const normalised = new ReplaySession(loaded, { order: 'any', match: { normalize: ['ids', 'timestamps', 'uuids'] } })
  const normalisedIndexMs = performance.now() - normalisedStarted
  const { lookups: normalisedTimes, normalise: normalisedNormalise } = await timeLookups(loaded, normalised, positions)
  normalisedTimes.sort((a, b) => a - b)
  normalisedNormalise.sort((a, b) => a - b)

  // Polly's persister: entries.find(e => e._id === id && e._order === order), one linear scan per request.
  let linearP99: number | null = null
  if (exchanges >= 100_000) {
    const entries = loaded.exchanges.map((e, index) => ({ id: `${e.request.method} ${e.request.url}`, order: index }))
    const times: number[] = []
    for (let i = 0; i < 200; i++) {
      const target = entries[Math.floor(Math.random() * entries.length)]!
      const t = performance.now()
      entries.find((e) => e.id === target.id && e.order === target.order)
      times.push((performance.now() - t) * 1000)
    }
    linearP99 = percentile(times.sort((a, b) => a - b), 99)
  }
  strictTimes.sort((a, b) => a - b)
  anyTimes.sort((a, b) => a - b)
  normaliseTimes.sort((a, b) => a - b)
  return {
    exchanges,
    fileMiB: (await stat(file)).size / 1024 / 1024,
    loadMs: median(loads),
    heapMiB: heap / 1024 / 1024,
    indexMs,
    strictP50Us: percentile(strictTimes, 50),
    strictP99Us: percentile(strictTimes, 99),
    anyP50Us: percentile(anyTimes, 50),
    anyP99Us: percentile(anyTimes, 99),
    linearP99Us: linearP99,
    normaliseP50Us: percentile(normaliseTimes, 50),
    normalisedIndexMs,
    normalisedP50Us: percentile(normalisedTimes, 50),
    normalisedP99Us: percentile(normalisedTimes, 99),
    normalisedNormaliseP50Us: percentile(normalisedNormalise, 50),
  }
}

interface LargeBodiesResult {
  layout: string
  jsonlMiB: number
  longestLineKiB: number
  loadMs: number
}

/** 64 exchanges of 1 MiB bodies (half random bytes, half JSON text), inline and in body files. */
async function measureLargeBodies(dir: string, rounds: number): Promise<LargeBodiesResult[]> {
  const exchanges = Array.from({ length: 64 }, (_, index) => {
    const json = index % 2 === 1
    const data = json ? JSON.stringify(Array.from({ length: 30_000 }, (_, i) => ({ id: index * 100_000 + i, name: `item ${i}`, ok: true }))).slice(0, 1024 * 1024) : randomBytes(1024 * 1024).toString('base64')
    const body: StoredBody = json ? { encoding: 'utf8', data, size: Buffer.byteLength(data), truncated: false } : { encoding: 'base64', data, size: 1024 * 1024, truncated: false }
    return exchangeAt(index + 1, {
      route: 'GET /files/:id',
      request: { method: 'GET', url: `/files/${index}`, headers: {}, body: null },
      response: { status: 200, headers: { 'content-type': json ? 'application/json' : 'application/octet-stream' }, body },
    })
  })
  const cassette = Cassette.from({ recorded: '2025-01-01T00:00:00.000Z', source: 'proxy' }, exchanges)
  const layouts: Array<[string, string, () => Promise<void>]> = []
  const inline = path.join(dir, 'inline.cassette.jsonl')
  layouts.push(['every body inline (as before body files)', inline, () => writeLinesAtomic(inline, cassette.lines())])
  const files = path.join(dir, 'files.cassette.jsonl')
  layouts.push(['bodies over 64 KiB in body files', files, () => cassette.save(files)])
  const results: LargeBodiesResult[] = []
  for (const [layout, file, write] of layouts) {
    await write()
    const loads: number[] = []
    for (let round = 0; round < rounds; round++) {
      gc()
      const started = performance.now()
      const loaded = await Cassette.load(file)
      loads.push(performance.now() - started)
      if (loaded.exchanges.length !== exchanges.length) throw new Error('large-body cassette lost exchanges')
    }
    const lines = (await readFile(file, 'utf8')).split('\n')
    results.push({ layout, jsonlMiB: (await stat(file)).size / 1024 / 1024, longestLineKiB: Math.max(...lines.map((line) => line.length)) / 1024, loadMs: median(loads) })
  }
  return results
}

export async function benchCassette(options: Options): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-bench-cassette-'))
  try {
    const results: SizeResult[] = []
    for (const exchanges of [10_000, 100_000]) {
      const file = path.join(dir, `synthetic-${exchanges}.cassette.jsonl`)
      await writeSynthetic(file, exchanges)
      results.push(await measure(file, exchanges, options))
    }
    const [small, large] = results as [SizeResult, SizeResult]
    const largeBodies = await measureLargeBodies(dir, Math.max(options.rounds, 3))
    const f = (n: number | null, digits = 1) => (n === null ? '—' : n.toFixed(digits))
    const table = [
      '| exchanges | file MiB | load ms | heap MiB | any-order index ms | strict p50/p99 µs | any-order p50/p99 µs | linear scan p99 µs | normalise p50 µs |',
      '|---|---|---|---|---|---|---|---|---|',
      ...results.map((r) => `| ${r.exchanges} | ${f(r.fileMiB)} | ${f(r.loadMs, 0)} | ${f(r.heapMiB)} | ${f(r.indexMs, 0)} | ${f(r.strictP50Us, 2)} / ${f(r.strictP99Us, 2)} | ${f(r.anyP50Us, 2)} / ${f(r.anyP99Us, 2)} | ${f(r.linearP99Us, 0)} | ${f(r.normaliseP50Us, 1)} |`),
      '',
      `(${options.rounds} load round(s), ${options.lookups} lookups per size; lookups time the decision on an already normalised request, "normalise" is the per-request redaction and digest cost, the same at any size${(globalThis as { gc?: unknown }).gc ? '' : '; run node with --expose-gc for exact heap figures'})`,
      '',
      '| exchanges, any order, --normalize ids,timestamps,uuids | index ms | lookup p50/p99 µs | normalise p50 µs |',
      '|---|---|---|---|',
      ...results.map((r) => `| ${r.exchanges} | ${f(r.normalisedIndexMs, 0)} | ${f(r.normalisedP50Us, 2)} / ${f(r.normalisedP99Us, 2)} | ${f(r.normalisedNormaliseP50Us, 1)} |`),
      '',
      '| 64 bodies of 1 MiB (half random, half JSON) | JSONL MiB | longest line KiB | load ms |',
      '|---|---|---|---|',
      ...largeBodies.map((r) => `| ${r.layout} | ${f(r.jsonlMiB, 2)} | ${f(r.longestLineKiB, 0)} | ${f(r.loadMs, 0)} |`),
    ].join('\n')
    return {
      suite: 'cassette',
      results,
      largeBodies,
      table,
      gates: {
        'load 100k exchanges ≤ 2 s': large.loadMs <= 2000,
        'lookup p99 ≤ 50 µs at 100k (strict and any order)': large.strictP99Us <= 50 && large.anyP99Us <= 50,
        'lookup flat: p99 at 100k ≤ 2× p99 at 10k + 5 µs': large.anyP99Us <= 2 * small.anyP99Us + 5 && large.strictP99Us <= 2 * small.strictP99Us + 5,
        'with normalisers: lookup p99 ≤ 50 µs at 100k and flat (≤ 2× 10k + 5 µs)': large.normalisedP99Us <= 50 && large.normalisedP99Us <= 2 * small.normalisedP99Us + 5,
      },
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
