/**
 * Who waits for the client's answer to a JSON-RPC request sent in a server's place (a replayed
 * sampling or elicitation request): the answer, or what stands for it, goes to the earliest
 * waiter for its id. Over stdio the wrapper hands a waiter the client's answer line
 * (stdio-server.ts); over HTTP a replayed stream is released by the answer's POST
 * (cassette/replay/client-answer-gates.ts).
 */
import type { JsonRpcId } from './mcp-request.js'

export class AnswerWaiters<T> {
  readonly #waiting = new Map<JsonRpcId, Array<(value: T) => void>>()

  /** Whether anyone waits (an answer is looked for only then). */
  get pending(): boolean {
    return this.#waiting.size > 0
  }

  /** Wait for the answer to `id` (register before sending the request); rejects when `signal` aborts. */
  expect(id: JsonRpcId, signal: AbortSignal): Promise<T> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason as Error)
      const queue = this.#waiting.get(id) ?? []
      const aborted = () => {
        this.#remove(id, take)
        reject(signal.reason as Error)
      }
      const take = (value: T) => {
        signal.removeEventListener('abort', aborted)
        resolve(value)
      }
      signal.addEventListener('abort', aborted, { once: true })
      queue.push(take)
      this.#waiting.set(id, queue)
    })
  }

  /** The answer to `id` came: the earliest waiter takes `value`. False when nobody waited for it. */
  arrived(id: JsonRpcId, value: T): boolean {
    const queue = this.#waiting.get(id)
    const take = queue?.shift()
    if (queue?.length === 0) this.#waiting.delete(id)
    take?.(value)
    return take !== undefined
  }

  #remove(id: JsonRpcId, take: (value: T) => void): void {
    const queue = this.#waiting.get(id)
    if (!queue) return
    const at = queue.indexOf(take)
    if (at !== -1) queue.splice(at, 1)
    if (queue.length === 0) this.#waiting.delete(id)
  }
}
