/**
 * Effects and claims kept in a run's shared state, whichever replica served the call: an effect
 * is taken by one script against the run's exchange map (EFFECT), a refused report is counted
 * (REFUSED), and a claim (posted, or an OTLP span's) goes to the run the one claim router names
 * (call-decider.ts `claimRun`).
 * @see ../../docs/scale-out.md
 */
import { ClaimError, EffectError } from '../errors.js'
import type { CallDecider } from '../engine/call-decider.js'
import { roundSeconds } from '../engine/clock.js'
import { checkEffectInput, MAX_EFFECTS, type NewClaim } from '../engine/ledger/run-ledger.js'
import { identityDigest } from '../engine/run.js'
import type { SpanBatch, StoredClaim } from '../engine/run-claims.js'
import type { EffectRecord } from '../engine/schema/report.js'
import type { RedisClaimLog } from './redis-claims.js'
import { EFFECT_SCRIPT, REFUSED_SCRIPT } from './redis-scripts.js'
import { runOfExchange, type RedisStore, type RunKeys } from './redis-store.js'

export class RedisEffects {
  constructor(
    readonly store: RedisStore,
    readonly decider: CallDecider,
    readonly claims: RedisClaimLog,
  ) {}

  /** Record a committed effect for the exchange `call` names, whichever replica served it. */
  async effect(name: unknown, key: unknown, call: string): Promise<EffectRecord> {
    checkEffectInput(name, key)
    const run = runOfExchange(call)
    if (run === null) throw new EffectError('ERR_EFFECT_INVALID', `Failed to record an effect: no exchange "${call.slice(0, 64)}" in this run's shared state. Was the run reset, or did the request bypass toolstorm?`)
    const keys = this.store.runKeys(run)
    const redactor = this.decider.redactor
    const safeName = redactor.text(name)
    const safeKey = redactor.text(key as string)
    // The identity is of the raw pair; only its digest reaches Redis.
    const digest = identityDigest(name, key as string)
    const reply = (await this.store.eval(EFFECT_SCRIPT, [keys.state, keys.exchanges, keys.effects], [
      this.store.ttlMs,
      call,
      safeName,
      safeKey,
      digest,
      safeName !== name || safeKey !== key ? '1' : '0',
      String(MAX_EFFECTS),
    ])) as [number, string?]
    if (reply[0] === 0) throw new EffectError('ERR_EFFECT_INVALID', `Failed to record an effect: no exchange "${call.slice(0, 64)}" in this run's shared state. Was the run reset, or did the request bypass toolstorm?`)
    if (reply[0] === -1) throw new EffectError('ERR_EFFECT_LIMIT', `Failed to record an effect: the run already holds ${MAX_EFFECTS} effects.`)
    return JSON.parse(reply[1] as string) as EffectRecord
  }

  /** Count a refused effect report in the run its call id names, else in every run the store keeps. */
  async refuseEffect(reason: string, call?: string): Promise<void> {
    const { store } = this
    const named = call === undefined ? null : runOfExchange(call)
    const counted = named !== null && (await store.eval(REFUSED_SCRIPT, [store.runKeys(named).state], [reason.slice(0, 300)])) === 1
    if (counted) return
    const ids = await store.command(() => store.client.zRange(store.runsKey, 0, -1))
    await Promise.all(ids.map((id) => store.eval(REFUSED_SCRIPT, [store.runKeys(id).state], [reason.slice(0, 300)])))
  }

  /**
   * Keep a claim (already redacted) in the run's shared list, so every replica's report judges
   * it: it speaks for the run's calls so far, counted across replicas (docs/claims.md).
   */
  async addClaim(claim: NewClaim): Promise<{ run: string; claim: StoredClaim }> {
    const { run: runId, keys, at, upTo } = await this.#claimRun(claim.run)
    const { tool, toolCallId, status, source, traceId, spanId } = claim
    const stored = await this.claims.add(keys.claims, { tool, toolCallId, status, source, traceId, spanId, at, upTo, after: 0 })
    if (!stored) throw new ClaimError('ERR_CLAIM_LIMIT', `Failed to record a claim: run "${runId}" already holds 10,000 claims.`)
    return { run: runId, claim: stored }
  }

  /**
   * Keep an OTLP export's claims (already redacted) in the run's shared list, and its spans'
   * parent links and counts beside them, so every replica's report joins the claims to the calls
   * made under their spans. Each claim speaks for the run's calls so far (span times are not
   * held against calls here: those are spread over the replicas).
   */
  async addSpans(named: string | undefined, _traceId: string, batch: SpanBatch): Promise<{ run: string; rejected: number }> {
    const { run, keys, at, upTo } = await this.#claimRun(named)
    const kept = await this.claims.addAll(
      keys.claims,
      batch.claims.map(({ startMs: _start, endMs: _end, ...claim }) => ({ ...claim, at, upTo, after: 0 })),
    )
    await this.claims.addSpans(keys.spans, { received: batch.received, ignored: batch.ignored, claims: kept }, batch.links)
    return { run, rejected: batch.claims.length - kept }
  }

  /**
   * Where a claim goes, and when it came: any replica may have served the run, so a named run is
   * known; a trace's run is one replica's memory (the requests it served), so it is not asked.
   */
  async #claimRun(named: string | undefined): Promise<{ run: string; keys: RunKeys; at: number; upTo: number }> {
    const run = this.decider.claimRun(named, () => true, undefined)
    const { store } = this
    const keys = store.runKeys(run)
    const [calls, start] = await store.command(() => store.client.hmGet(keys.state, ['calls', 'start']))
    const startMs = Number(start ?? NaN)
    const at = Number.isFinite(startMs) ? roundSeconds(Math.max(0, Date.now() - startMs) / 1000) : 0
    return { run, keys, at, upTo: Number(calls ?? 0) }
  }
}
