/**
 * A flight recorder for a proxy: the incidents folder opened (and bounded), the recorder's lines
 * held, and with a shared store (`--state`) one incident per run between the replicas. The vitest
 * fixture opens its folder once per worker and makes one per storm (`flightRecorderIn`).
 */
import type { CassetteRecorder } from '../cassette/record/cassette-recorder.js'
import type { RunLedger } from '../engine/ledger/run-ledger.js'
import type { RedisRunState } from '../state/redis-run-state.js'
import { FlightRecorder } from './flight-recorder.js'
import type { IncidentOptions } from './incident-options.js'
import { IncidentStore } from './incident-store.js'

type Hooks = Pick<ConstructorParameters<typeof FlightRecorder>[2], 'onKept' | 'onError' | 'label'>

export async function startFlightRecorder(recorder: CassetteRecorder, ledger: RunLedger, shared: RedisRunState | null, options: IncidentOptions, hooks: Hooks = {}): Promise<FlightRecorder> {
  const store = await IncidentStore.open(options.dir, { maxIncidents: options.maxIncidents, maxBytes: options.maxBytes })
  return flightRecorderIn(store, recorder, ledger, shared, options, hooks)
}

/** A flight recorder keeping its incidents in a store already open. */
export function flightRecorderIn(store: IncidentStore, recorder: CassetteRecorder, ledger: RunLedger, shared: RedisRunState | null, options: Omit<IncidentOptions, 'dir'>, hooks: Hooks = {}): FlightRecorder {
  return new FlightRecorder(recorder, store, {
    ledger,
    runIdleMs: options.runIdleMs,
    windowExchanges: options.windowExchanges,
    windowSeconds: options.windowSeconds,
    maxBufferBytes: options.maxBufferBytes,
    ...(shared ? { claimRun: (run: string) => shared.claimOnce(`incident:${run}`) } : {}),
    ...hooks,
  })
}
