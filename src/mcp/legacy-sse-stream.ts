/**
 * The GET event stream of one legacy HTTP+SSE MCP session (spec 2024-11-05), relayed event by
 * event: the answers to the session's POSTs arrive here as `event: message`, so faults on an
 * answer act here. Answers can be injected (a tool_error written by the proxy), held and then
 * released, changed or delayed (`alter`) or lost (response_lost resets the stream instead), and
 * read for evidence. Other events are never held back by a held answer. Events pass
 * unparsed while nothing waits for an answer; only an event whose id something waits for is read.
 *
 * @see docs/mcp.md#legacy-httpsse-transport
 */
import type { McpCall } from '../engine/schema/report.js'
import { SseSplitter } from '../engine/streams/sse-splitter.js'
import { createMcpAnswerReader } from './mcp-answer-reader.js'
import type { JsonRpcId } from './mcp-request.js'

/** Answers waited for per stream; past it the oldest wait is forgotten (its evidence stays unknown). */
export const MAX_PENDING_ANSWERS = 1000
/** Bytes queued for a slow client before the upstream is read further. */
const HIGH_WATER = 256 * 1024

/** What becomes of an answer's data (a JSON-RPC message): the data the client gets instead, when it is ready. */
export type AnswerChange = (data: string) => Promise<string>

interface Pending {
  /** The report entry whose outcome the answer fills in. */
  call: McpCall | null
  /**
   * `hold`: the answer waits for `release`, `alter` or `lose`; `lose`: it is dropped and the
   * stream reset; a function: the answer goes out as it makes it.
   */
  hold: 'hold' | 'lose' | AnswerChange | null
  /** The held answer's bytes, once it arrived. */
  held: Uint8Array | null
}

const encoder = new TextEncoder()

/** The data of one SSE block (its `data:` lines joined), decoded. */
export function blockData(bytes: Uint8Array): string {
  const lines = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8').split(/\r\n|\r|\n/)
  const data: string[] = []
  for (const line of lines) {
    if (line === 'data') data.push('')
    else if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5))
  }
  return data.join('\n')
}

/** The id of a JSON-RPC response (no method), or null when `data` is none. */
export function responseId(data: string): JsonRpcId | null {
  let message: unknown
  try {
    message = JSON.parse(data)
  } catch {
    return null
  }
  if (message === null || typeof message !== 'object' || 'method' in message) return null
  const id = (message as { id?: unknown }).id
  return typeof id === 'string' || typeof id === 'number' ? id : null
}

/** Fill `call`'s outcome from the answer message `data`. */
function recordOutcome(call: McpCall | null, id: JsonRpcId, data: Uint8Array): void {
  if (!call) return
  const read = createMcpAnswerReader(id, 'application/json', (answer) => {
    call.outcome = answer.outcome
    call.errorCode = answer.errorCode
  })
  read(data)
  read(null)
}

export class LegacySseStream implements AsyncIterable<Uint8Array> {
  readonly #source: AsyncIterator<Uint8Array>
  readonly #splitter = new SseSplitter()
  readonly #onFirstEvent: (event: string | null, data: string) => void
  readonly #onEnd: () => void
  readonly #pending = new Map<JsonRpcId, Pending>()
  #queue: Uint8Array[] = []
  #queued = 0
  #first = true
  /** An oversized upstream event is passing in pieces: what the proxy writes waits for its end. */
  #midEvent = false
  #deferred: Uint8Array[] = []
  #done = false
  #failure: Error | null = null
  #started = false
  /** The consumer waits for bytes; the pump waits for the consumer to drain. */
  #wakeConsumer: (() => void) | null = null
  #wakePump: (() => void) | null = null

  constructor(source: AsyncIterable<Uint8Array>, onFirstEvent: (event: string | null, data: string) => void, onEnd: () => void) {
    this.#source = source[Symbol.asyncIterator]()
    this.#onFirstEvent = onFirstEvent
    this.#onEnd = onEnd
  }

  /** Whether the stream is still relayed to its client. */
  get live(): boolean {
    return !this.#done && this.#failure === null
  }

  /** The answer to `id` fills in `call`'s outcome as it passes (or is injected). */
  watch(id: JsonRpcId, call: McpCall | null): void {
    this.#entry(id).call = call
  }

  /** The answer to `id` waits until `release` or `lose`. */
  hold(id: JsonRpcId): void {
    this.#entry(id).hold = 'hold'
  }

  /** Let the held answer to `id` through (now, or when it comes). */
  release(id: JsonRpcId): void {
    const pending = this.#pending.get(id)
    if (!pending) return
    this.#pending.delete(id)
    if (pending.held) this.#emit(pending.held, id, pending.call)
  }

  /** Let the answer to `id` through when it is still held with nothing decided. */
  releaseUndecided(id: JsonRpcId): void {
    if (this.#pending.get(id)?.hold === 'hold') this.release(id)
  }

  /** The answer to `id` goes out as `change` makes it (now when it was held, else when it comes). */
  alter(id: JsonRpcId, change: AnswerChange): void {
    const pending = this.#entry(id)
    if (!pending.held) {
      pending.hold = change
      return
    }
    this.#pending.delete(id)
    this.#change(pending.held, id, pending.call, change)
  }

  /** Drop the answer to `id` and reset the stream: now when it was held, else when it comes. */
  lose(id: JsonRpcId): void {
    const pending = this.#entry(id)
    if (pending.held) {
      this.#pending.delete(id)
      this.reset()
    } else pending.hold = 'lose'
  }

  /** Write the answer `message` (JSON-RPC, for request `id`) to the client as a `message` event. */
  inject(id: JsonRpcId, message: Uint8Array): void {
    const pending = this.#pending.get(id)
    this.#pending.delete(id)
    const event = encoder.encode(`event: message\ndata: ${Buffer.from(message).toString('utf8')}\n\n`)
    recordOutcome(pending?.call ?? null, id, message)
    this.#write(event)
  }

  /** The client sees its stream reset (its upstream is let go). */
  reset(): void {
    if (!this.live) return
    this.#failure = Object.assign(new Error('The legacy SSE stream was reset by a fault'), { code: 'ECONNRESET' })
    this.#stop()
  }

  [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    return {
      next: () => this.#next(),
      return: async () => {
        this.#done = true
        this.#stop()
        return { value: undefined, done: true }
      },
    }
  }

  async #next(): Promise<IteratorResult<Uint8Array>> {
    if (!this.#started) {
      this.#started = true
      void this.#pump()
    }
    for (;;) {
      const chunk = this.#queue.shift()
      if (chunk) {
        this.#queued -= chunk.length
        if (this.#queued <= HIGH_WATER) this.#wake('pump')
        return { value: chunk, done: false }
      }
      if (this.#failure) throw this.#failure
      if (this.#done) return { value: undefined, done: true }
      await new Promise<void>((resolve) => (this.#wakeConsumer = resolve))
    }
  }

  async #pump(): Promise<void> {
    try {
      for (;;) {
        const { value, done } = await this.#source.next()
        if (!this.live) return
        if (done) break
        for (const piece of this.#splitter.push(value)) {
          this.#piece(piece.bytes, piece.complete, piece.dispatches, piece.event)
          this.#midEvent = !piece.complete
          if (!this.#midEvent && this.#deferred.length) for (const event of this.#deferred.splice(0)) this.#push(event)
        }
        if (this.#queued > HIGH_WATER) await new Promise<void>((resolve) => (this.#wakePump = resolve))
      }
      const rest = this.#splitter.flush()
      if (rest) this.#push(rest.bytes)
      this.#done = true
    } catch (error) {
      if (this.live) this.#failure = error instanceof Error ? error : new Error(String(error))
    }
    this.#stop()
  }

  #piece(bytes: Uint8Array, complete: boolean, dispatches: boolean, event: string | null): void {
    // The first event (comments before it, such as keep-alives, do not count) may name the endpoint.
    if (this.#first && complete && dispatches) {
      this.#first = false
      this.#onFirstEvent(event, blockData(bytes))
    }
    // Nothing waits for an answer: the event passes unread.
    if (this.#pending.size === 0 || !complete || !dispatches || (event !== null && event !== 'message')) return this.#push(bytes)
    const data = blockData(bytes)
    const id = responseId(data)
    const pending = id === null ? undefined : this.#pending.get(id)
    if (id === null || !pending) return this.#push(bytes)
    if (pending.hold === 'lose') {
      this.#pending.delete(id)
      return this.reset()
    }
    if (pending.hold === 'hold') {
      pending.held = bytes
      return
    }
    this.#pending.delete(id)
    if (typeof pending.hold === 'function') return this.#change(bytes, id, pending.call, pending.hold, data)
    this.#emit(bytes, id, pending.call, data)
  }

  /** Emit the answer as `change` makes it; the original when it fails or changes nothing. */
  #change(bytes: Uint8Array, id: JsonRpcId, call: McpCall | null, change: AnswerChange, data: string = blockData(bytes)): void {
    change(data).then(
      (changed) => (changed === data ? this.#emit(bytes, id, call, data) : this.#emit(encoder.encode(`event: message\ndata: ${changed}\n\n`), id, call, changed)),
      () => this.#emit(bytes, id, call, data),
    )
  }

  #emit(bytes: Uint8Array, id: JsonRpcId, call: McpCall | null, data: string = blockData(bytes)): void {
    recordOutcome(call, id, encoder.encode(data))
    this.#write(bytes)
  }

  /** A whole event of the proxy's (injected, released, changed): never inside an upstream event passing in pieces. */
  #write(event: Uint8Array): void {
    if (this.#midEvent) this.#deferred.push(event)
    else this.#push(event)
  }

  #entry(id: JsonRpcId): Pending {
    let pending = this.#pending.get(id)
    if (!pending) {
      if (this.#pending.size >= MAX_PENDING_ANSWERS) this.#pending.delete(this.#pending.keys().next().value as JsonRpcId)
      this.#pending.set(id, (pending = { call: null, hold: null, held: null }))
    }
    return pending
  }

  #push(bytes: Uint8Array): void {
    if (!this.live || bytes.length === 0) return
    this.#queue.push(bytes)
    this.#queued += bytes.length
    this.#wake('consumer')
  }

  #wake(who: 'consumer' | 'pump'): void {
    const wake = who === 'consumer' ? this.#wakeConsumer : this.#wakePump
    if (who === 'consumer') this.#wakeConsumer = null
    else this.#wakePump = null
    wake?.()
  }

  /** Stop reading the upstream, wake whoever waits, and leave the session registry. */
  #stop(): void {
    this.#pending.clear()
    this.#wake('consumer')
    this.#wake('pump')
    void this.#source.return?.()?.catch?.(() => undefined)
    this.#onEnd()
  }
}
