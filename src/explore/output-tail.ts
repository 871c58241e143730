/**
 * The last of what a command printed, bounded: a baseline that fails shows its tail, and a
 * counterexample keeps it, without holding a chatty agent's whole output per run.
 */

/** Bytes kept per run. */
const KEEP_BYTES = 16 * 1024
/** Lines shown. */
const SHOWN_LINES = 40

export class OutputTail {
  #chunks: Buffer[] = []
  #bytes = 0

  push(chunk: Buffer): void {
    this.#chunks.push(chunk)
    this.#bytes += chunk.length
    while (this.#bytes - (this.#chunks[0]?.length ?? 0) >= KEEP_BYTES && this.#chunks.length > 1) this.#bytes -= this.#chunks.shift()!.length
  }

  /** The last lines (at most 40), as text. */
  text(): string {
    const all = Buffer.concat(this.#chunks)
    const text = all.subarray(Math.max(0, all.length - KEEP_BYTES)).toString('utf8')
    const lines = text.replace(/\n$/, '').split('\n')
    return lines.slice(-SHOWN_LINES).join('\n')
  }
}
