/**
 * Reading a whole response body, decoding `content-encoding` when present.
 * Bodies are streamed everywhere else; only faults that need the whole body call this.
 */
import { promisify } from 'node:util'
import zlib from 'node:zlib'
import type { HeaderMap } from './http.js'

export type BodySource = AsyncIterable<Uint8Array>

const gunzip = promisify(zlib.gunzip)
const inflate = promisify(zlib.inflate)
const brotli = promisify(zlib.brotliDecompress)

/** Read all bytes of a body. */
export async function readAll(body: BodySource): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of body) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk))
  return Buffer.concat(chunks)
}

/** Read all bytes and decode gzip/deflate/br. `decoded` says whether the encoding was removed. */
export async function readBodyDecoded(body: BodySource, headers: HeaderMap): Promise<{ bytes: Buffer; decoded: boolean }> {
  const raw = await readAll(body)
  const encodingHeader = headers['content-encoding']
  const encoding = (Array.isArray(encodingHeader) ? encodingHeader.join(',') : encodingHeader ?? '').trim().toLowerCase()
  if (encoding === '' || encoding === 'identity') return { bytes: raw, decoded: false }
  try {
    if (encoding === 'gzip' || encoding === 'x-gzip') return { bytes: await gunzip(raw), decoded: true }
    if (encoding === 'deflate') return { bytes: await inflate(raw), decoded: true }
    if (encoding === 'br') return { bytes: await brotli(raw), decoded: true }
  } catch {
    // A body that does not decode is passed on as it came.
  }
  return { bytes: raw, decoded: false }
}
