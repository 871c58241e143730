/**
 * The deltas of a model stream, as rules name them (`at: text | tool_arguments` on `stream_cut`
 * and `stream_stall`). The kernel knows the words; reading them off a provider's events is a
 * plug-in's (`ExchangePlugin.readDelta`: the model-calls plug-in's, src/model-calls/model-events.ts).
 */

export const DELTA_KINDS = ['text', 'tool_arguments'] as const

export type DeltaKind = (typeof DELTA_KINDS)[number]

/** How messages name each kind. */
export const DELTA_NAMES: Record<DeltaKind, string> = { text: 'text deltas', tool_arguments: 'tool-call argument deltas' }

/** Where in a model stream a cut fell: inside which deltas, after how many of them. */
export interface CutAt {
  readonly at: DeltaKind
  readonly deltas: number
}

/** The delta one complete SSE event (its bytes, blank line included) carries, if any. */
export type DeltaReader = (event: Uint8Array) => DeltaKind | null
