/**
 * `token_limit` budgets shared by replicas (`--state`): one hash per run holds, per rule and
 * window, the calls let through and the tokens they used, so replicas behind one quota see one
 * budget. A script takes the verdict atomically when the call begins (redis-calls.ts);
 * the call's tokens are added once it finished, from its real usage. The window is the one the
 * run's shared clock (Redis TIME, as BEGIN returns it) falls in, so every replica reports the
 * same remaining budget and reset.
 * @see ../../docs/scale-out.md#token-quotas
 */
import type { QuotaVerdict } from '../engine/faults/fault.js'
import { WINDOW_SECONDS, windowOf, type QuotaLimits } from '../model-calls/faults/token-window.js'

/**
 * TAKE. KEYS: the run's quota hash. ARGV: ttlMs, field prefix ("<window>:<rule>"), tokens per
 * minute, requests per minute (-1: none). Returns {admitted 0|1, tokens, requests}, the usage
 * before this call; an admitted call is counted in the window's requests.
 */
export const QUOTA_TAKE_SCRIPT = `
local q, ttl, at = KEYS[1], ARGV[1], ARGV[2]
local tokens = tonumber(redis.call('HGET', q, at .. ':t') or '0')
local requests = tonumber(redis.call('HGET', q, at .. ':r') or '0')
local perMinute = tonumber(ARGV[4])
local admitted = 0
-- The same test as hasRoom() in model-calls/token-window.ts (one process's windows).
if tokens < tonumber(ARGV[3]) and (perMinute < 0 or requests < perMinute) then
  admitted = 1
  redis.call('HINCRBY', q, at .. ':r', 1)
  redis.call('PEXPIRE', q, ttl)
end
return {admitted, tokens, requests}
`

/** CHARGE. KEYS: the run's quota hash. ARGV: ttlMs, field prefix, tokens the finished call used. */
export const QUOTA_CHARGE_SCRIPT = `
redis.call('HINCRBY', KEYS[1], ARGV[2] .. ':t', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`

/** Runs a script in the store, within its deadline (`RedisStore.eval`). */
export type ScriptRunner = (script: string, keys: string[], args: string[]) => Promise<unknown>

export class RedisTokenQuota {
  readonly #eval: ScriptRunner
  readonly #ttlMs: string

  constructor(evaluate: ScriptRunner, ttlMs: string) {
    this.#eval = evaluate
    this.#ttlMs = ttlMs
  }

  /**
   * The window's verdict on a call of `rule` that began `elapsed` seconds into the run (the run's
   * shared clock). Throws `StateUnavailableError` when Redis cannot be reached.
   */
  async take(key: string, rule: QuotaLimits & { readonly name: string }, elapsed: number): Promise<QuotaVerdict> {
    const window = windowOf(elapsed)
    const [admitted, tokens, requests] = (await this.#eval(QUOTA_TAKE_SCRIPT, [key], [this.#ttlMs, `${window}:${rule.name}`, String(rule.tokensPerMinute), String(rule.requestsPerMinute ?? -1)])) as [number, number, number]
    const usage = { tokens, requests, resetSeconds: (window + 1) * WINDOW_SECONDS - elapsed }
    return { admitted: admitted === 1, window, usage }
  }

  /** Add the tokens a call let through used, once it finished, to the window it began in. */
  charge(key: string, rule: string, window: number, tokens: number): Promise<unknown> {
    return this.#eval(QUOTA_CHARGE_SCRIPT, [key], [this.#ttlMs, `${window}:${rule}`, String(tokens)])
  }
}
