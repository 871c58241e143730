/**
 * The notifications a stdio MCP server sends the client (progress, log messages, list changes),
 * told to whoever records the session: each one is published on a diagnostics channel with the
 * exchange it belongs to, the call it arrived `during` (a progress names its call by its token;
 * other notifications go to the latest call still running), or the next call when none was
 * running (`before`). A cassette recorder keeps them on that call's line
 * (src/cassette/record/exchange-capture.ts) and a replay sends them before its answer. Nothing is
 * published, and nothing is tracked per message, when no recorder listens.
 */
import { channel } from 'node:diagnostics_channel'

export const SERVER_MESSAGE_CHANNEL = 'toolstorm:stdio:server-message'

export interface ServerMessageEvent {
  /** The exchange (`x-toolstorm-call`) the message belongs to. */
  readonly exchangeId: string
  readonly line: Buffer
  readonly when: 'before' | 'during'
  /** A `notifications/progress` naming this call's `progressToken`. */
  readonly progress: boolean
}

export const serverMessages = channel(SERVER_MESSAGE_CHANNEL)

/** Messages kept for the next call at most, when none is running (the oldest go first). */
const MAX_HELD = 1_000

/** A call running, as the tracker knows it. */
interface Running {
  readonly exchangeId: string
  /** Its request's `params._meta.progressToken`, if any. */
  readonly progressToken: unknown
}

export class ServerMessageTracker {
  readonly #running: Running[] = []
  #held: Buffer[] = []

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
    for (const line of held) serverMessages.publish({ exchangeId, line, when: 'before', progress: false } satisfies ServerMessageEvent)
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
    if (this.#held.length >= MAX_HELD) this.#held.shift()
    this.#held.push(line)
  }
}
