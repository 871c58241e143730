/**
 * `toolstorm:contract:checked`: a contract was run on a run through the admin API (`POST /contract`).
 * The flight recorder (src/incidents) keeps a run whose contract failed. `storm` is the storm's
 * nonce, so a listener hears only its own proxy's runs.
 */
import diagnostics from 'node:diagnostics_channel'

export interface ContractCheckedEvent {
  readonly storm: string
  readonly run: string
  readonly passed: boolean
  /** The failed checks, one line each. */
  readonly failed: readonly string[]
}

export const contractChecked = diagnostics.channel('toolstorm:contract:checked')
