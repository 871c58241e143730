/**
 * `startProxy({ record })`: a cassette recorder the proxy owns. Any observer given to the proxy is
 * told where it sits, so a recorder stores what `toolstorm record` stores (origin-form URLs behind
 * a reverse proxy: replay matches whatever port the client names next time).
 */
import { createCassetteRecorder, type CassetteRecorder } from '../cassette/record/cassette-recorder.js'
import type { CassetteRecorderOptions } from '../cassette/record/recorder-options.js'
import { combineObservers } from '../combine-observers.js'
import type { ExchangeObserver } from '../engine/exchange-flow.js'
import type { Storm } from '../engine/storm.js'
import type { IncidentOptions } from '../incidents/incident-options.js'
import { DEFAULT_BODY_LIMIT } from '../cassette/format/cassette-schema.js'

/** `record`: the cassette file, or the recorder's options with it. */
export type ProxyRecordOptions = string | (CassetteRecorderOptions & { file: string })

export interface ProxyObservers {
  readonly observer: ExchangeObserver | undefined
  /** The recorder `record` asked for (closed with the proxy), else null. */
  readonly recorder: CassetteRecorder | null
  /** The recorder whose lines the flight recorder holds (`incidents`): the `record` one, the one given, or one of its own. */
  readonly incidentLines: CassetteRecorder | null
}

/** The proxy's observer: the user's and the recorder's, each told it is behind this proxy. */
export function proxyObservers(storm: Storm, options: { record?: ProxyRecordOptions | undefined; observer?: ExchangeObserver | undefined; targets: readonly string[]; incidents?: IncidentOptions | undefined }): ProxyObservers {
  const record = typeof options.record === 'string' ? { file: options.record } : options.record
  const recorder = record ? createCassetteRecorder(storm, record) : null
  // Incidents reuse a recorder's lines (one capture per exchange); else one that keeps nothing but them.
  const own = options.incidents && !options.incidents.recorder && !recorder ? createCassetteRecorder(storm, { memory: false, bodyLimit: DEFAULT_BODY_LIMIT }) : null
  const incidentLines = options.incidents ? (options.incidents.recorder ?? recorder ?? own) : null
  const observer = combineObservers(combineObservers(recorder?.observer, own?.observer), options.observer)
  observer?.attached?.({ source: 'proxy', targets: options.targets })
  return { observer, recorder: recorder ?? own, incidentLines }
}
