/**
 * Calls whose answer was `input_required` (revision 2026-07-28), until the client calls again
 * with the input: that retry is a further round of the same call (one call in the report, to the
 * rules and in coverage), not a new one. The retry repeats the request on a fresh id with
 * `inputResponses` and the opaque `requestState` added to its params: it is known by its session,
 * method, target and arguments. One registry per storm, whichever transport saw the answer.
 *
 * @see docs/mcp.md#the-2026-07-28-revision
 */
import { canonicalJson } from '../json/canonical-json.js'
import { mcpRouteName, type McpRequest } from './mcp-request.js'
import type { McpCall } from '../engine/schema/report.js'

/** The round that asked for input: its exchange (the call's `x-toolstorm-call`) and its report entry. */
export interface AskingRound {
  readonly exchangeId: string
  readonly call: McpCall
}

/** Calls waiting for their retry at most (the oldest is forgotten first: its retry is then a call of its own). */
const MAX_WAITING = 1_000

export class InputRounds {
  /** The last round of each call waiting, by what its retry repeats. */
  readonly #waiting = new Map<string, AskingRound>()

  /** `request`'s answer asked for input: its retry continues the call `round` is the last round of. */
  asked(request: McpRequest, round: AskingRound): void {
    const key = keyOf(request)
    this.#waiting.delete(key)
    if (this.#waiting.size >= MAX_WAITING) this.#waiting.delete(this.#waiting.keys().next().value as string)
    this.#waiting.set(key, round)
  }

  /** The round `request` follows, if it is a retry with input and a call waits for it. */
  take(request: McpRequest): AskingRound | undefined {
    if (!request.answersInput) return undefined
    const key = keyOf(request)
    const round = this.#waiting.get(key)
    this.#waiting.delete(key)
    return round
  }
}

function keyOf(request: McpRequest): string {
  return `${request.session ?? ''}\n${mcpRouteName(request)}\n${canonicalJson(request.arguments ?? null)}`
}

const registries = new WeakMap<object, InputRounds>()

/** The calls waiting for their input behind `storm`. */
export function inputRoundsOf(storm: object): InputRounds {
  let rounds = registries.get(storm)
  if (!rounds) registries.set(storm, (rounds = new InputRounds()))
  return rounds
}
