/**
 * Bounded capture of a body as it streams past: keeps the first bytes, counts the rest.
 *
 * It keeps a margin beyond the stored limit so that redaction sees a credential that crosses
 * the cut whole: the redacted text is cut at the limit afterwards, never the raw bytes.
 */

/** Bytes kept beyond the stored limit, so a secret crossing the cut is still seen whole. */
export const REDACTION_MARGIN = 64 * 1024

export class BodyCapture {
  readonly #cap: number
  readonly #chunks: Buffer[] = []
  #kept = 0
  /** Bytes seen in total. */
  size = 0
  ended = false

  /** `limit`: bytes that will be stored; the capture keeps `limit + REDACTION_MARGIN`. */
  constructor(limit: number) {
    this.#cap = limit + REDACTION_MARGIN
  }

  push(chunk: Uint8Array): void {
    this.size += chunk.length
    const room = this.#cap - this.#kept
    if (room <= 0) return
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const kept = room >= buffer.length ? Buffer.from(buffer) : Buffer.from(buffer.subarray(0, room))
    this.#chunks.push(kept)
    this.#kept += kept.length
  }

  /** Whether every byte was kept. */
  get complete(): boolean {
    return this.#kept === this.size
  }

  bytes(): Buffer {
    return this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks)
  }
}

/** Capture a whole buffer at once (replay reads request bodies this way). */
export function captureBytes(bytes: Uint8Array | null, limit: number): BodyCapture {
  const capture = new BodyCapture(limit)
  if (bytes && bytes.length) capture.push(bytes)
  capture.ended = true
  return capture
}
