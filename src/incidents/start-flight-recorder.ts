/**
 * A flight recorder for a proxy: the incidents folder opened (and bounded), the recorder's lines
 * held, and with a shared store (`--state`) one incident per run between the replicas.
 */
import type { CassetteRecorder } from '../cassette/record/cassette-recorder.js'
import type { RunLedger } from '../engine/ledger/run-ledger.js'
import type { RedisRunState } from '../state/redis-run-state.js'
import { FlightRecorder } from './flight-recorder.js'
import type { IncidentOptions } from './incident-options.js'
import { IncidentStore } from './incident-store.js'

export async function startFlightRecorder(recorder: CassetteRecorder, ledger: RunLedger, shared: RedisRunState | null, options: IncidentOptions, hooks: Pick<ConstructorParameters<typeof FlightRecorder>[2], 'onKept' | 'onError'> = {}): Promise<FlightRecorder> {
  const store = await IncidentStore.open(options.dir, { maxIncidents: options.maxIncidents, maxBytes: options.maxBytes })
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
