/**
 * Calls begun and finished with a run's shared counters: the decider plans a call as in one
 * process (call-decider.ts: run, route, config), one script takes budget, ordinal, key, eligibility
 * and limits atomically (BEGIN; SELECT only when a probabilistic rule's draw needs the key), and the
 * decider opens the exchange from what Redis counted. Finished calls are written out together at
 * the end of the event loop turn (FINISH).
 * @see ../../docs/scale-out.md
 */
import { StateUnavailableError, ToolstormError } from '../errors.js'
import type { CallDecider, CallPlan } from '../engine/call-decider.js'
import { decide } from '../engine/decision.js'
import type { Exchange } from '../engine/exchange.js'
import type { BeginRequest } from '../engine/ledger/run-ledger.js'
import { ruleMatches } from '../engine/rules/select.js'
import type { MemoryLedger } from '../engine/ledger/memory-ledger.js'
import { ITEMIZED_CALLS_LIMIT } from '../engine/schema/config.js'
import type { CallRecord } from '../engine/schema/report.js'
import type { Rule } from '../engine/schema/rule.js'
import type { TokenLimitRule } from '../model-calls/faults/token-limit.js'
import type { RedisRunRules } from './redis-run-rules.js'
import { BEGIN_SCRIPT, FINISH_SCRIPT, SELECT_SCRIPT } from './redis-scripts.js'
import { encodeRun, type RedisStore, type RunKeys } from './redis-store.js'
import { RedisTokenQuota } from './redis-token-quota.js'

const ITEMIZED = String(ITEMIZED_CALLS_LIMIT)

type BeginReply = [status: number, start: number, now: number, call?: number, ordinal?: number, key?: string, parent?: number, selected?: string, pending?: number]

/** A BEGIN that met other own rules of the run than those its replica decided by: [2, token, config]. */
const OTHER_RULES = 2
/** BEGINs of one call at most while its run's own rules keep changing under it. */
const MAX_RULE_CHANGES = 5

export class RedisCalls {
  readonly #store: RedisStore
  readonly #decider: CallDecider
  readonly #rules: RedisRunRules
  readonly #quota: RedisTokenQuota
  /** This replica's view of each run its exchanges belong to, kept as one process keeps runs (the store holds the run itself). */
  readonly #local: MemoryLedger
  /** Exchanges answered without the store, per run, not yet added to its shared count. */
  readonly unavailable = new Map<string, number>()
  #flushing = false
  /** Calls finished in this event loop turn, per run, written out together. */
  readonly #finishing = new Map<string, { keys: RunKeys; run: string; records: CallRecord[]; ids: string[] }>()

  constructor(store: RedisStore, decider: CallDecider, rules: RedisRunRules, local: MemoryLedger) {
    this.#store = store
    this.#decider = decider
    this.#rules = rules
    this.#local = local
    this.#quota = new RedisTokenQuota((script, keys, args) => store.eval(script, keys, args), store.ttlMs)
  }

  /**
   * Start an exchange with the run's shared state. Throws `StateUnavailableError` when Redis
   * cannot be reached (counted in the run's `stateUnavailable`, whatever the caller does then).
   */
  async begin(request: BeginRequest): Promise<Exchange> {
    const planned = this.#decider.plan(request)
    // The run travels inside the exchange id, so an effect posted to any replica finds it.
    let plan: CallPlan = { ...planned, id: `${planned.id}.${encodeRun(planned.run)}` }
    const store = this.#store
    const keys = store.runKeys(plan.run)
    // A BEGIN Redis runs after its deadline took a call this replica answered without the store:
    // it is finished there at once (unlisted), so the merged report never shows it running.
    const late = (reply: unknown) => {
      const [status, , , call] = reply as BeginReply
      if (status === 1) void store.eval(FINISH_SCRIPT, [keys.state, keys.calls, keys.exchanges, keys.running], [store.ttlMs, ITEMIZED, '', '', plan.id, String(call)]).catch(() => undefined)
    }
    try {
      // The run's own rules when it has some (any replica may have set them), else the proxies'.
      for (let attempt = 1; ; attempt++) {
        const matching = plan.config.rules.filter((rule) => ruleMatches(rule, plan.route, plan.path))
        // The method and redacted URL list the call as running in the merged report until it finished.
        const args = [store.ttlMs, String(plan.config.maxCalls ?? -1), plan.route, plan.key ?? '', plan.id, plan.parent ?? '', String(matching.length), plan.view.method, this.#decider.redactedUrl(plan.url.href), ITEMIZED, this.#rules.token(plan.run)]
        for (const rule of matching) args.push(...ruleArgs(rule, rule.probability >= 1 ? 'a' : rule.probability <= 0 ? 'n' : 'd'))
        const reply = (await store.eval(BEGIN_SCRIPT, [keys.state, keys.keys, keys.exchanges, keys.running, keys.rules], args, late)) as BeginReply
        if (reply[0] !== OTHER_RULES) return await this.#opened(plan, keys, matching, reply, late)
        if (attempt >= MAX_RULE_CHANGES) throw new ToolstormError('ERR_STATE', `Failed to begin a call of run "${plan.run}": its own rules changed ${MAX_RULE_CHANGES} times while it began. Set a run's rules before its calls.`)
        const [, token, text] = reply as unknown as [number, string, string]
        this.#rules.adopt(plan.run, { token, config: text })
        // Planned again under the rules the store holds (their routes may name the call otherwise).
        const again = this.#decider.plan(request)
        plan = { ...again, id: plan.id }
      }
    } catch (error) {
      if (error instanceof StateUnavailableError) this.countUnavailable(plan.run)
      throw error
    }
  }

  /** The exchange of a call BEGIN took (or refused by the budget), its rule selected. */
  async #opened(plan: CallPlan, keys: RunKeys, matching: Rule[], reply: BeginReply, late: (reply: unknown) => void): Promise<Exchange> {
    const store = this.#store
    // Redis is back: add what was served without it to every run's count (not waited for): a run
    // that has no call more on this replica would otherwise pass on another's report without them.
    if (this.unavailable.size > 0) void this.flushUnavailable()
    const [status, startMs, nowMs] = reply
    const run = this.#local.run(plan.run)
    // This replica's clock, aligned with the run's start in Redis: call timings are the run's.
    const started = Math.max(0, (nowMs - startMs) / 1000)
    run.start = this.#decider.clock.now() - started
    if (status === 0) return this.#decider.refusedExchange(run, plan)
    const [, , , call, ordinal, key, parent, chosen, pending] = reply as Required<BeginReply>
    if (call === 1) void store.command(() => store.client.zAdd(store.runsKey, { score: startMs, value: plan.run })).catch(() => undefined)
    const { config, route } = plan
    let selected = chosen
    if (pending > 0) {
      // A draw decides from here: the key is known now, so every remaining draw is.
      const rest = ['' + ordinal, String(pending), String(matching.length), String(call)]
      for (const rule of matching) rest.push(...ruleArgs(rule, decide(config.seed, rule.name, route, key, rule.probability) ? 'a' : 'n'))
      selected = (await store.eval(SELECT_SCRIPT, [keys.state, keys.running], rest)) as string
    }
    const rule = selected ? (matching.find((candidate) => candidate.name === selected) ?? null) : null
    let quota
    if (rule?.kind === 'token_limit') {
      try {
        quota = await this.#quota.take(keys.quota, rule as unknown as TokenLimitRule, started)
      } catch (error) {
        // The call was taken in Redis: finish it there (unlisted), as a late BEGIN's is.
        late([1, startMs, nowMs, call])
        throw error
      }
    }
    return this.#decider.openExchange(run, plan, ordinal, key, rule, call, started, parent || null, { quota, onFinish: (exchange) => this.#finished(keys, exchange) })
  }

  /**
   * Write a finished call out at the end of the event loop turn: after the flow's last hooks
   * (which may add its model call), together with the run's other calls that finished in it.
   */
  #finished(keys: RunKeys, exchange: Exchange): void {
    if (exchange.quota?.admitted) this.#charge(keys, exchange)
    let batch = this.#finishing.get(keys.state)
    if (!batch) {
      batch = { keys, run: exchange.run.id, records: [], ids: [] }
      this.#finishing.set(keys.state, batch)
      if (this.#finishing.size === 1) setImmediate(() => this.#flushFinished())
    }
    batch.records.push(exchange.record as CallRecord)
    batch.ids.push(exchange.id)
  }

  /** Add a `token_limit` call's tokens to its window, once its usage is final (after the flow's last hooks). */
  #charge(keys: RunKeys, exchange: Exchange): void {
    setImmediate(() => {
      const model = exchange.record?.model
      const tokens = (model?.inputTokens ?? 0) + (model?.outputTokens ?? 0)
      // Not counted in stateUnavailable: the call itself may well be written; its tokens are missing from the budget.
      if (tokens > 0) void this.#quota.charge(keys.quota, exchange.rule!.name, exchange.quota!.window, tokens).catch(() => undefined)
    })
  }

  #flushFinished(): void {
    for (const { keys, run, records, ids } of this.#finishing.values()) {
      const args = [this.#store.ttlMs, ITEMIZED]
      records.forEach((record, i) => {
        args.push(record.id <= ITEMIZED_CALLS_LIMIT ? JSON.stringify(record) : '', record.injected && record.fault ? record.fault : '', ids[i] as string, String(record.id))
      })
      this.#store.eval(FINISH_SCRIPT, [keys.state, keys.calls, keys.exchanges, keys.running], args).catch(() => {
        // Redis went away after these exchanges began: they are missing from the shared report, counted.
        for (let i = 0; i < records.length; i++) this.countUnavailable(run)
      })
    }
    this.#finishing.clear()
  }

  /** Count an exchange served without the store (answered 503 or passed through). */
  countUnavailable(run: string): void {
    this.unavailable.set(run, (this.unavailable.get(run) ?? 0) + 1)
  }

  /**
   * Add the exchanges served without the store to each run's shared count. Taken off here only once
   * Redis counted them: a report read meanwhile may count them twice, never miss them.
   */
  async flushUnavailable(): Promise<void> {
    if (this.#flushing) return
    this.#flushing = true
    try {
      await Promise.all(
        [...this.unavailable].map(async ([run, count]) => {
          await this.#store.command(() => this.#store.client.hIncrBy(this.#store.runKeys(run).state, 'unavailable', count))
          const left = (this.unavailable.get(run) ?? 0) - count
          if (left > 0) this.unavailable.set(run, left)
          else this.unavailable.delete(run)
        }),
      ).catch(() => undefined)
    } finally {
      this.#flushing = false
    }
  }
}

function ruleArgs(rule: Rule, mode: 'a' | 'n' | 'd'): string[] {
  return [rule.name, String(rule.limit ?? -1), mode, rule.calls.join(',')]
}
