/**
 * A chain of checks over a report. An empty contract does not pass: it establishes nothing.
 *
 * @example
 * contract(storm.report()).requireTriggered().noDuplicateEffects().atMostCalls(2).assertValid()
 */
import { ConfigError, ContractFailedError } from '../errors.js'
import type { Report } from '../engine/schema/report.js'
import type { Check } from '../engine/contracts/check.js'
import { CONTRACT_UNITS } from './registry.js'
import { TOKEN_KINDS, type TokenKind } from '../model-calls/contracts/at-most-tokens.js'
import { duplicateEffects, formatDuplicateEffects } from '../engine/contracts/duplicate-effects.js'
import { callsOnRoute } from '../engine/contracts/calls-on-route.js'
import { formatUnapprovedEffects, unapprovedEffects } from '../engine/contracts/effects-require-approval.js'

/** Calls listed under a failed budget, at most; the rest are counted. */
const LISTED_CALLS = 10

/** `call 3  POST /ship  response 503  [unavailable]`, one line each, bounded. */
function formatCalls(calls: Report['calls']): string[] {
  const lines = calls.slice(0, LISTED_CALLS).map((call) => `call ${call.id}  ${call.route}  ${call.outcome}${call.status === null ? '' : ` ${call.status}`}${call.injected && call.fault ? `  [${call.fault}]` : ''}`)
  if (calls.length > LISTED_CALLS) lines.push(`… and ${calls.length - LISTED_CALLS} more`)
  return lines
}

/** A check as `toJSON()` (and the admin API's `POST /contract`) gives it: a failing one also lists what it names. */
export interface CheckResult extends Check {
  /** What a failing check names, one line each (the duplicated effects' keys and calls, the calls over a budget); absent otherwise. */
  readonly details?: readonly string[]
}

export interface ContractResult {
  readonly passed: boolean
  readonly checks: readonly CheckResult[]
}

export class Contract {
  readonly #report: Report
  readonly #checks: Check[] = []
  /** What a failing check names, beyond its one-line detail (in `failures()` and `toResult()`, not in `checks` or `toJSON()`). */
  readonly #naming = new Map<Check, string[]>()

  constructor(report: Report) {
    this.#report = report
  }

  /** Each named rule (every rule when none is named) triggered at least once. */
  requireTriggered(...names: string[]): this {
    return this.#add(CONTRACT_UNITS.requireTriggered.check(this.#report, { names }))
  }

  /** No effect identity was committed twice. A failure names each duplicated key and its calls. */
  noDuplicateEffects(): this {
    const checks = CONTRACT_UNITS.noDuplicateEffects.check(this.#report, {})
    for (const check of checks) if (!check.passed) this.#naming.set(check, formatDuplicateEffects(duplicateEffects(this.#report)))
    return this.#add(checks)
  }

  /** At most `count` calls overall (refusals included) or on `route`. A failure lists the calls. */
  atMostCalls(count: number, options: { route?: string } = {}): this {
    assertCount(count, 'Call limit')
    const checks = CONTRACT_UNITS.atMostCalls.check(this.#report, { count, route: options.route })
    const calls = options.route === undefined ? this.#report.calls : callsOnRoute(this.#report, options.route)
    for (const check of checks) if (!check.passed) this.#naming.set(check, formatCalls(calls))
    return this.#add(checks)
  }

  /** At most `count` effects named `name` (with `key`, when given). Fails closed on redacted effects. */
  atMostEffects(name: string, count: number, options: { key?: string } = {}): this {
    assertCount(count, 'Effect limit')
    return this.#add(CONTRACT_UNITS.atMostEffects.check(this.#report, { name, count, key: options.key }))
  }

  /** At most `count` model calls (OpenAI chat completions / Responses, Anthropic messages), whatever their outcome. */
  atMostModelCalls(count: number): this {
    assertCount(count, 'Model-call limit')
    return this.#add(CONTRACT_UNITS.atMostModelCalls.check(this.#report, { count }))
  }

  /**
   * At most `count` tokens over all model calls, from the providers' usage fields: `total`
   * (default), `input` or `output`. Fails closed when a call was answered without usage.
   */
  atMostTokens(count: number, options: { kind?: TokenKind } = {}): this {
    assertCount(count, 'Token limit')
    const kind = options.kind ?? 'total'
    if (!TOKEN_KINDS.includes(kind)) throw new ConfigError(`Failed to add a contract check: unknown token kind "${String(kind)}". Use one of ${TOKEN_KINDS.map((k) => `"${k}"`).join(', ')}.`)
    return this.#add(CONTRACT_UNITS.atMostTokens.check(this.#report, { count, kind }))
  }

  /** Recovering from each triggered fault took at most `count` tokens (fails closed on calls without usage). */
  maxRecoveryTokens(count: number): this {
    assertCount(count, 'Recovery token limit')
    return this.#add(CONTRACT_UNITS.maxRecoveryTokens.check(this.#report, { count }))
  }

  /**
   * The agent's claims about its tool calls agree with the effects committed under them: no
   * silent commit, no phantom success (docs/claims.md). A report without claims passes it vacuously.
   */
  claimsMatchEffects(): this {
    return this.#add(CONTRACT_UNITS.claimsMatchEffects.check(this.#report, {}))
  }

  /**
   * Every effect named `effect` was committed after a 2xx answer from the approval `route`, in
   * this run (docs/contracts.md). A failure names each effect's key, the call that committed it
   * and what the approval route answered before it.
   */
  effectsRequireApproval(options: { effect: string; route: string }): this {
    const { effect, route } = options ?? {}
    if (typeof effect !== 'string' || effect === '' || typeof route !== 'string' || route === '') {
      throw new ConfigError('Failed to add a contract check: effectsRequireApproval needs { effect, route }, two nonempty strings (the effect name and the approval route).')
    }
    const checks = CONTRACT_UNITS.effectsRequireApproval.check(this.#report, { effect, route })
    for (const check of checks) if (!check.passed && !check.detail.startsWith('Cannot')) this.#naming.set(check, formatUnapprovedEffects(unapprovedEffects(this.#report, effect, route), route))
    return this.#add(checks)
  }

  /** No route was called again before the Retry-After it was given had passed. */
  retryAfterRespected(): this {
    return this.#add(CONTRACT_UNITS.retryAfterRespected.check(this.#report, {}))
  }

  /** A custom check; `detail` is shown as written (keep secrets out of it). */
  check(name: string, passed: boolean, detail = ''): this {
    if (typeof passed !== 'boolean') throw new ConfigError('Failed to add a contract check: the condition must be a boolean.')
    return this.#add([{ name, passed, detail }])
  }

  get checks(): readonly Check[] {
    return this.#checks
  }

  /** True only with at least one check and every check passing. */
  get passed(): boolean {
    return this.#checks.length > 0 && this.#checks.every((check) => check.passed)
  }

  toJSON(): ContractResult {
    return { passed: this.passed, checks: this.#checks.map((check) => ({ ...check })) }
  }

  /**
   * `toJSON()` with what each failing check names as `details` (absent when it names nothing):
   * the admin API's `POST /contract` answer, so a client in another language prints the same lines.
   */
  toResult(): ContractResult {
    return {
      passed: this.passed,
      checks: this.#checks.map((check) => {
        const details = this.#naming.get(check)
        return details?.length ? { ...check, details: [...details] } : { ...check }
      }),
    }
  }

  /**
   * One line per failing check, each followed by what it names, indented as `toolstorm check`
   * prints it (the duplicated effects' keys and calls, the calls over a budget). Empty when all pass.
   */
  failures(): string[] {
    return this.#checks.filter((check) => !check.passed).flatMap((check) => [`${check.name}: ${check.detail}`, ...(this.#naming.get(check) ?? []).map((line) => `    ${line}`)])
  }

  /** Throw a `ContractFailedError` listing every failing check (or saying the contract is empty). */
  assertValid(): void {
    if (this.#checks.length === 0) {
      throw new ContractFailedError('An empty contract cannot establish correctness. Add at least one check.', { code: 'ERR_CONTRACT_EMPTY' })
    }
    const lines = this.failures()
    if (lines.length > 0) throw new ContractFailedError(`toolstorm contract failed\n${lines.join('\n')}`, { details: lines.join('\n') })
  }

  #add(checks: Check[]): this {
    this.#checks.push(...checks)
    return this
  }
}

/** Start a contract over a report. */
export function contract(report: Report): Contract {
  return new Contract(report)
}

function assertCount(count: number, what: string): void {
  if (!Number.isInteger(count) || count < 0) throw new ConfigError(`Failed to add a contract check: ${what} must be a nonnegative integer.`)
}
