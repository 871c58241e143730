/**
 * The messages of MCP's stdio transport: newline-delimited JSON-RPC (spec: "messages are
 * delimited by newlines, and MUST NOT contain embedded newlines"). Splits a byte stream into its
 * lines as they complete, without decoding them: what passes through is relayed byte for byte.
 * A trailing CR is dropped (a line ended CRLF), and empty lines are skipped, as the SDKs' readers do.
 */
const LF = 0x0a
const CR = 0x0d

export class LineSplitter {
  readonly #onLine: (line: Buffer) => void
  /** Bytes of a line not yet ended. */
  #held: Buffer[] = []

  constructor(onLine: (line: Buffer) => void) {
    this.#onLine = onLine
  }

  push(chunk: Buffer): void {
    let start = 0
    for (let end = chunk.indexOf(LF); end !== -1; end = chunk.indexOf(LF, start)) {
      let line = chunk.subarray(start, end)
      if (this.#held.length) {
        this.#held.push(line)
        line = Buffer.concat(this.#held)
        this.#held = []
      }
      start = end + 1
      this.#emit(line)
    }
    if (start < chunk.length) this.#held.push(chunk.subarray(start))
  }

  /** The stream ended: a last line without its newline still counts. */
  end(): void {
    if (!this.#held.length) return
    const line = Buffer.concat(this.#held)
    this.#held = []
    this.#emit(line)
  }

  #emit(line: Buffer): void {
    const bare = line.length && line[line.length - 1] === CR ? line.subarray(0, -1) : line
    if (bare.length) this.#onLine(bare)
  }
}
