/**
 * Legacy HTTP+SSE MCP sessions (2024-11-05) in replay. Their answers travel on the session's GET
 * stream, not on the POSTs that asked, so a recorded answer is played when its POST is replayed,
 * not at its recorded time (the client may be slower, or the replay instant), and it carries
 * the live request's JSON-RPC id, as Streamable HTTP answers do (`rpc-ids.ts`).
 *
 * The stream's other events (the `endpoint` event, notifications) play at once, in their order.
 * Answers are matched by their recorded id: with several legacy sessions replayed at once, a
 * POST's answer plays in the first open stream that holds an answer to its recorded id.
 */
import { withAnswerId } from '../../mcp/json-rpc-body.js'
import { blockData, responseId } from '../../mcp/legacy-sse-stream.js'
import type { JsonRpcId } from '../../mcp/mcp-request.js'

/** The legacy session streams being replayed; a replayed POST releases its answer in one of them. */
export class LegacyAnswerGates {
  readonly #streams = new Set<LegacyStreamAnswers>()

  /** A stream whose recorded `answers` (events, with the recorded id each answers) wait for their POSTs. */
  open(answers: ReadonlyArray<{ id: JsonRpcId; bytes: Uint8Array }>): LegacyStreamAnswers {
    const stream = new LegacyStreamAnswers(answers, () => this.#streams.delete(stream))
    this.#streams.add(stream)
    return stream
  }

  /** The POST that asked `recorded` was replayed, as the live request `live`: the first stream holding that answer plays it. */
  release(recorded: JsonRpcId, live: JsonRpcId): void {
    for (const stream of this.#streams) if (stream.take(recorded, live)) return
  }
}

export class LegacyStreamAnswers {
  readonly #held = new Map<JsonRpcId, Array<{ id: JsonRpcId; bytes: Uint8Array }>>()
  readonly #ready: Uint8Array[] = []
  readonly #close: () => void
  #wake: (() => void) | null = null

  constructor(answers: ReadonlyArray<{ id: JsonRpcId; bytes: Uint8Array }>, close: () => void) {
    for (const answer of answers) {
      const queue = this.#held.get(answer.id) ?? []
      queue.push(answer)
      this.#held.set(answer.id, queue)
    }
    this.#close = close
  }

  /** Whether this stream held the answer to `recorded`; it then plays with the id `live`. */
  take(recorded: JsonRpcId, live: JsonRpcId): boolean {
    const answer = this.#held.get(recorded)?.shift()
    if (!answer) return false
    this.#ready.push(withAnswerId(answer.bytes, recorded, live))
    this.#wake?.()
    return true
  }

  /** The answers as their POSTs are replayed, until `signal` aborts (it then throws). */
  async *play(signal: AbortSignal): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        const ready = this.#ready.shift()
        if (ready) {
          yield ready
          continue
        }
        if (signal.aborted) throw signal.reason
        await new Promise<void>((resolve) => {
          const done = () => {
            this.#wake = null
            signal.removeEventListener('abort', done)
            resolve()
          }
          this.#wake = done
          signal.addEventListener('abort', done, { once: true })
        })
      }
    } finally {
      this.#close()
    }
  }
}

/** Whether a recorded event-stream body is a legacy session's GET stream: its first event names the POST endpoint. */
export function isLegacySessionStream(body: Uint8Array): boolean {
  const head = Buffer.from(body.buffer, body.byteOffset, Math.min(body.byteLength, 1024)).toString('utf8')
  for (const block of head.split(/\r?\n\r?\n/)) {
    const lines = block.split(/\r?\n/).filter((line) => line !== '' && !line.startsWith(':'))
    if (lines.length === 0) continue
    return lines.some((line) => /^event: ?endpoint$/.test(line))
  }
  return false
}

/** The recorded id of the JSON-RPC answer an event carries, or null for any other event. */
export function answerIdOf(event: Uint8Array): JsonRpcId | null {
  return responseId(blockData(event))
}
