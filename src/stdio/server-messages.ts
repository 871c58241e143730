/**
 * The messages a stdio MCP server sends the client on its own: notifications (progress, log
 * messages, list changes) and requests (sampling, elicitation, roots), with the client's answer
 * to each request. They are told to whoever records the session: each one is published on a
 * diagnostics channel with the exchange it belongs to, the call it arrived `during` (a progress
 * names its call by its token; other messages go to the latest call still running), or the next
 * call when none was running (`before`); a client's answer goes where the request went. A cassette
 * recorder keeps them on that call's line (src/cassette/record/exchange-capture.ts) and a replay
 * sends them before its answer, waiting for the client's answer to each request. Nothing is
 * published, and nothing is tracked per message, when no recorder listens.
 */
import { channel } from 'node:diagnostics_channel'
import type { JsonRpcId } from '../mcp/mcp-request.js'

export const SERVER_MESSAGE_CHANNEL = 'toolstorm:stdio:server-message'

export interface ServerMessageEvent {
  /** The exchange (`x-toolstorm-call`) the message belongs to. */
  readonly exchangeId: string
  readonly line: Buffer
  readonly when: 'before' | 'during'
  /** A `notifications/progress` naming this call's `progressToken`. */
  readonly progress: boolean
  /** Set when `line` is the client's answer to the server's request with this id (not a server message). */
  readonly answers?: JsonRpcId
}

export const serverMessages = channel(SERVER_MESSAGE_CHANNEL)

/** Messages kept for the next call at most, when none is running (the oldest go first); as many requests wait for their answers. */
const MAX_HELD = 1_000

/** A message held for the next call; `asks`: a server's request (its id), `answers`: the client's answer to one. */
interface Held {
  readonly line: Buffer
  readonly asks?: JsonRpcId
  readonly answers?: JsonRpcId
}

/** A call running, as the tracker knows it. */
interface Running {
  readonly exchangeId: string
  /** Its request's `params._meta.progressToken`, if any. */
  readonly progressToken: unknown
}

export class ServerMessageTracker {
  readonly #running: Running[] = []
  #held: Held[] = []
  /** The server's requests still unanswered, and the call each went to (null: held for the next call). */
  readonly #asked = new Map<JsonRpcId, string | null>()

  /** Whether a recorder listens (the tracker is told of calls and messages only then). */
  get wanted(): boolean {
    return serverMessages.hasSubscribers
  }

  /** A call began: the messages held since the last one belong to it. */
  began(exchangeId: string, message: Record<string, unknown>): void {
    const params = message.params as { _meta?: { progressToken?: unknown } } | undefined
    this.#running.push({ exchangeId, progressToken: params?._meta?.progressToken })
    const held = this.#held
    this.#held = []
    for (const { line, asks, answers } of held) {
      if (asks !== undefined && this.#asked.get(asks) === null) this.#asked.set(asks, exchangeId)
      serverMessages.publish({ exchangeId, line, when: 'before', progress: false, ...(answers === undefined ? {} : { answers }) } satisfies ServerMessageEvent)
    }
  }

  ended(exchangeId: string): void {
    const at = this.#running.findIndex((running) => running.exchangeId === exchangeId)
    if (at !== -1) this.#running.splice(at, 1)
  }

  /** The server sent the notification `message` (its `line`). */
  notification(line: Buffer, message: Record<string, unknown>): void {
    const token = message.method === 'notifications/progress' ? (message.params as { progressToken?: unknown } | undefined)?.progressToken : undefined
    const named = token === undefined ? undefined : this.#running.find((running) => running.progressToken === token)
    const target = named ?? this.#running.at(-1)
    if (target) return void serverMessages.publish({ exchangeId: target.exchangeId, line, when: 'during', progress: named !== undefined } satisfies ServerMessageEvent)
    this.#hold({ line })
  }

  /** The server sent the client the request `line` (sampling, elicitation, roots): it goes to the latest call running. */
  request(line: Buffer, id: JsonRpcId): void {
    if (this.#asked.size >= MAX_HELD) this.#asked.delete(this.#asked.keys().next().value as JsonRpcId)
    const target = this.#running.at(-1)
    this.#asked.set(id, target?.exchangeId ?? null)
    if (target) return void serverMessages.publish({ exchangeId: target.exchangeId, line, when: 'during', progress: false } satisfies ServerMessageEvent)
    this.#hold({ line, asks: id })
  }

  /** The client answered (`line`) the server's request `id`: told with the request, unless the server never asked it. */
  answer(line: Buffer, id: JsonRpcId): void {
    const exchangeId = this.#asked.get(id)
    if (exchangeId === undefined) return
    this.#asked.delete(id)
    if (exchangeId !== null) return void serverMessages.publish({ exchangeId, line, when: 'during', progress: false, answers: id } satisfies ServerMessageEvent)
    this.#hold({ line, answers: id })
  }

  #hold(held: Held): void {
    if (this.#held.length >= MAX_HELD) this.#held.shift()
    this.#held.push(held)
  }
}
