/**
 * Turn captured body bytes into what a cassette stores: decoded (gzip, deflate, br), redacted,
 * bounded, and encoded as UTF-8 text when it is text or base64 otherwise.
 *
 * Recording and replay run the same function on request bodies, so a replayed request compares
 * equal to its recording whatever real secret it carries.
 */
import zlib from 'node:zlib'
import type { Redactor } from '../../redact/index.js'
import type { StoredBody } from './cassette-schema.js'
import { REDACTION_MARGIN, type BodyCapture } from './body-capture.js'

export interface StoreBodyOptions {
  /** The message's Content-Type (picks JSON, form, SSE or text redaction). */
  contentType: string | undefined
  /** The message's Content-Encoding. */
  contentEncoding: string | undefined
  /** Bytes stored at most. */
  limit: number
  redactor: Redactor
}

type Coding = 'gzip' | 'deflate' | 'br'

function codingOf(value: string | undefined): Coding | 'identity' | 'unknown' {
  const coding = (value ?? '').trim().toLowerCase()
  if (coding === '' || coding === 'identity') return 'identity'
  if (coding === 'gzip' || coding === 'x-gzip') return 'gzip'
  if (coding === 'deflate' || coding === 'br') return coding
  return 'unknown'
}

/**
 * Decode at most `cap` bytes. A truncated input decodes as far as it goes. Null when the bytes
 * do not decode at all (they are then stored as they came).
 */
function decodeBounded(raw: Buffer, coding: Coding, cap: number, rawDeflate = false): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const flush = coding === 'br' ? { finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH } : { finishFlush: zlib.constants.Z_SYNC_FLUSH }
    const stream = coding === 'gzip' ? zlib.createGunzip(flush) : coding === 'br' ? zlib.createBrotliDecompress(flush) : rawDeflate ? zlib.createInflateRaw(flush) : zlib.createInflate(flush)
    const chunks: Buffer[] = []
    let size = 0
    let done = false
    const finish = (value: Buffer | null) => {
      if (done) return
      done = true
      stream.destroy()
      resolve(value)
    }
    stream.on('data', (chunk: Buffer) => {
      const room = cap - size
      chunks.push(room >= chunk.length ? chunk : chunk.subarray(0, room))
      size += Math.min(room, chunk.length)
      if (size >= cap) finish(Buffer.concat(chunks))
    })
    stream.on('end', () => finish(Buffer.concat(chunks)))
    stream.on('error', () => {
      if (size > 0) return finish(Buffer.concat(chunks))
      // Servers that say "deflate" often mean raw deflate.
      if (coding === 'deflate' && !rawDeflate) {
        done = true
        stream.destroy()
        void decodeBounded(raw, coding, cap, true).then(resolve)
        return
      }
      finish(null)
    })
    stream.end(raw)
  })
}

const TEXT_DECODER = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The bytes as text when they are UTF-8 without control characters (tab and line breaks aside). */
export function asText(bytes: Buffer, cutMayBeMidCharacter: boolean): string | null {
  // A prefix may end inside a multi-byte character: drop up to 3 bytes of it.
  for (let drop = 0; drop <= (cutMayBeMidCharacter ? 3 : 0) && drop < bytes.length + 1; drop++) {
    try {
      const text = TEXT_DECODER.decode(drop ? bytes.subarray(0, bytes.length - drop) : bytes)
      // eslint-disable-next-line no-control-regex
      return /[\u0000-\u0008\u000b\u000e-\u001f\u007f]/.test(text) ? null : text
    } catch {
      // try a shorter prefix
    }
  }
  return null
}

/** Cut text to at most `limit` UTF-8 bytes, on a character boundary. */
export function cutText(text: string, limit: number): string {
  if (Buffer.byteLength(text) <= limit) return text
  let cut = Buffer.from(text).subarray(0, limit).toString('utf8')
  // A cut inside a character leaves a replacement character at the end.
  if (cut.endsWith('\ufffd') && !text.startsWith(cut)) cut = cut.slice(0, -1)
  return cut
}

/**
 * What a cassette stores for a body; null when it was empty.
 * @example
 * await storeBody(capture, { contentType: 'application/json', contentEncoding: undefined, limit: 1 << 20, redactor })
 */
export async function storeBody(capture: BodyCapture, options: StoreBodyOptions): Promise<StoredBody | null> {
  if (capture.size === 0) return null
  const { limit, redactor } = options
  let bytes = capture.bytes()
  // Whether bytes beyond `bytes` exist (the capture or the decoder stopped early).
  let cut = !capture.complete
  let decoded: Coding | undefined
  const coding = codingOf(options.contentEncoding)
  if (coding !== 'identity' && coding !== 'unknown') {
    const plain = await decodeBounded(bytes, coding, limit + REDACTION_MARGIN)
    if (plain !== null) {
      cut = cut || plain.length >= limit + REDACTION_MARGIN
      bytes = plain
      decoded = coding
    }
  }
  const text = asText(bytes, cut)
  let body: { encoding: StoredBody['encoding']; data: string; truncated: boolean }
  if (text !== null) {
    const redacted = redactor.body(text, options.contentType)
    const stored = cutText(redacted, limit)
    body = { encoding: 'utf8', data: stored, truncated: cut || stored.length !== redacted.length }
  } else {
    // Binary: credential-shaped ASCII inside it is masked byte for byte, every other byte kept
    // (a text scan would also rewrite `x.PWD:…` that random bytes form by chance).
    const latin1 = bytes.toString('latin1')
    const redacted = redactor.binary(latin1)
    const binary = redacted === latin1 ? bytes : Buffer.from(redacted, 'latin1')
    const stored = binary.length > limit ? binary.subarray(0, limit) : binary
    body = { encoding: 'base64', data: stored.toString('base64'), truncated: cut || stored.length !== binary.length }
  }
  return { encoding: body.encoding, data: body.data, size: capture.size, truncated: body.truncated, ...(decoded ? { decoded } : {}) }
}

/** The bytes a stored body holds. */
export function storedBodyBytes(body: StoredBody | null): Buffer {
  if (body === null) return Buffer.alloc(0)
  return body.encoding === 'utf8' ? Buffer.from(body.data, 'utf8') : Buffer.from(body.data, 'base64')
}
