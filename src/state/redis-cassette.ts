/**
 * Recording across replicas (docs/scale-out.md#recording-across-replicas): each replica appends
 * the exchanges it recorded to the run's cassette stream, and one reads them back as one cassette,
 * in the order Redis began the calls, with the effects and claims any replica received.
 */
import { MAX_CASSETTE_CLAIMS, type CassetteClaim, type CassetteExchange, type CassetteHeader } from '../cassette/format/cassette-schema.js'
import { ITEMIZED_CALLS_LIMIT } from '../engine/schema/config.js'
import type { EffectRecord, Report } from '../engine/schema/report.js'
import { CASSETTE_SCRIPT } from './redis-scripts.js'
import type { RedisStore } from './redis-store.js'

/** Reading a whole run's cassette (up to 256 MiB) may take longer than one exchange's command. */
const BULK_READ_TIMEOUT_MS = 60_000

export class RedisCassette {
  /** Lines this replica recorded that the run's bounds refused (they are counted in Redis too). */
  refused = 0

  constructor(
    readonly store: RedisStore,
    /** Bytes of cassette lines one run may hold, as Redis takes it. */
    readonly maxRunBytes: string,
  ) {}

  /** Append a recorded exchange of `run` (with the cassette `header` the first time); false when Redis could not take it. */
  async append(run: string, line: string, header: string | null): Promise<boolean> {
    const { store } = this
    const keys = store.runKeys(run)
    try {
      const stored = await store.eval(CASSETTE_SCRIPT, [keys.state, keys.cassette], [store.ttlMs, String(ITEMIZED_CALLS_LIMIT), this.maxRunBytes, header ?? '', line])
      if (stored === 0) this.refused++
      return true
    } catch {
      return false
    }
  }

  /**
   * The cassette of `ids` as every replica recorded it: the exchanges in call order (the order
   * Redis began them), numbered again, each with the effects any replica received for its call;
   * the header with the recorded runs' claims as `reportOf` judges them now.
   */
  async assemble(ids: readonly string[], reportOf: (run: string) => Promise<Report>): Promise<{ header: CassetteHeader | null; exchanges: CassetteExchange[]; dropped: number }> {
    const { store } = this
    const read = await store.command(
      () =>
        Promise.all(ids.map((id) => {
          const keys = store.runKeys(id)
          return Promise.all([store.client.hmGet(keys.state, ['start', 'cassette', 'cassetteDropped']), store.client.xRange(keys.cassette, '-', '+'), store.client.xRange(keys.effects, '-', '+')])
        })),
      { deadlineMs: BULK_READ_TIMEOUT_MS },
    )
    let header: { start: number; header: CassetteHeader } | null = null
    let dropped = 0
    const sorted: Array<{ at: number; call: number; exchange: CassetteExchange }> = []
    const recorded: string[] = []
    for (const [index, [[start, text, refused], lines, effectEntries]] of read.entries()) {
      if (typeof text !== 'string') continue
      recorded.push(ids[index] as string)
      const startMs = Number(start ?? 0)
      if (header === null || startMs < header.start) header = { start: startMs, header: JSON.parse(text) as CassetteHeader }
      dropped += Number(refused ?? 0)
      const effects = new Map<number, CassetteExchange['effects']>()
      for (const entry of effectEntries ?? []) {
        const { name, key, call, at, identity, redacted } = JSON.parse(entry.message.e as string) as EffectRecord
        effects.set(call, [...(effects.get(call) ?? []), { name, key, at, identity, redacted }])
      }
      for (const entry of lines ?? []) {
        const exchange = JSON.parse(entry.message.x as string) as CassetteExchange
        // Effects come from the run's stream: one reported to another replica belongs here too.
        if (exchange.call !== null) exchange.effects = effects.get(exchange.call) ?? []
        // Calls share Redis's clock and number: (start, call) is the order Redis began them in.
        sorted.push({ at: startMs + exchange.started * 1000, call: exchange.call ?? 0, exchange })
      }
    }
    sorted.sort((a, b) => a.at - b.at || a.call - b.call)
    return { header: header ? await withClaims(header.header, recorded, reportOf) : null, exchanges: sorted.map(({ exchange }, i) => ({ ...exchange, seq: i + 1 })), dropped }
  }
}

/**
 * The header with the recorded runs' claims judged now, from the store (the header kept in
 * Redis was made at the run's first exchange, before most claims came): docs/claims.md.
 */
async function withClaims(header: CassetteHeader, runs: readonly string[], reportOf: (run: string) => Promise<Report>): Promise<CassetteHeader> {
  const { claims: _stale, ...rest } = header
  const claims: CassetteClaim[] = []
  for (const run of runs) {
    for (const claim of (await reportOf(run)).claims ?? []) if (claims.length < MAX_CASSETTE_CLAIMS) claims.push({ run, ...claim })
  }
  return claims.length ? { ...rest, claims } : rest
}
