/**
 * The storm's own runs behind the storage port (run-ledger.ts): what a single proxy, intercept()
 * and MSW handlers keep in memory.
 */
import { EffectError } from '../../errors.js'
import type { BeginRequest, Storm } from '../storm.js'
import type { EffectOptions, RunLedger } from './run-ledger.js'

const ledgers = new WeakMap<Storm, MemoryLedger>()

/** The memory ledger of `storm` (one per storm). */
export function memoryLedger(storm: Storm): MemoryLedger {
  let ledger = ledgers.get(storm)
  if (!ledger) ledgers.set(storm, (ledger = new MemoryLedger(storm)))
  return ledger
}

export class MemoryLedger implements RunLedger {
  readonly #storm: Storm

  constructor(storm: Storm) {
    this.#storm = storm
  }

  begin(request: BeginRequest) {
    return this.#storm.begin(request)
  }

  async report(run?: string) {
    return this.#storm.report(run)
  }

  async runIds() {
    return this.#storm.runIds()
  }

  async runs() {
    return this.#storm.runIds().map((id) => ({ id, calls: this.#storm.report(id).calls.length }))
  }

  async reset(run?: string) {
    this.#storm.reset(run)
  }

  async effect(name: unknown, key: unknown, call: string, options: EffectOptions = {}) {
    // The exchange id is the capability: only the forwarded request carried it.
    if (!options.trusted && !this.#storm.knowsExchange(call)) {
      throw new EffectError('ERR_EFFECT_INVALID', 'Failed to record an effect: the call id names no live exchange. Pass the x-toolstorm-call header of the request being served.')
    }
    return this.#storm.effect(name as string, key as string, { call })
  }

  async publishRules() {}
}
