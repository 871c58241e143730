/** A byte-level stream transform: the first `after` bytes reach the client, then the connection closes. */
import type { StreamStep, StreamTransform } from './stream-transform.js'

export class TruncateTransform implements StreamTransform {
  readonly #after: number
  #sent = 0
  #changed = false

  constructor(after: number) {
    this.#after = after
  }

  get changed(): boolean {
    return this.#changed
  }

  get truncated(): boolean {
    return this.#changed
  }

  readonly events = null

  push(chunk: Uint8Array): StreamStep {
    const room = this.#after - this.#sent
    if (chunk.length <= room) {
      this.#sent += chunk.length
      return { send: chunk.length ? [{ bytes: chunk }] : [], next: 'continue' }
    }
    // More bytes than allowed exist: this is where the body is cut.
    this.#changed = true
    this.#sent = this.#after
    return { send: room > 0 ? [{ bytes: chunk.subarray(0, room) }] : [], next: 'abort' }
  }

  finish(): StreamStep {
    return { send: [], next: 'end' }
  }
}
