/**
 * The few `Buffer` methods the engine uses (decision digests, exchange ids, body reading, base64
 * scanning in redaction), over `Uint8Array`.
 * @note Hand-written rather than the `buffer` package: the lab needs seven methods, not 20 kB.
 */
type Encoding = 'utf8' | 'utf-8' | 'hex' | 'base64' | 'base64url' | 'latin1' | 'binary'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

function toBinaryString(bytes: Uint8Array): string {
  let out = ''
  for (let i = 0; i < bytes.length; i += 0x8000) out += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return out
}

function fromBase64(text: string): Uint8Array {
  // Node decodes leniently: url-safe letters, missing padding and stray characters are accepted.
  const clean = text.replace(/-/g, '+').replace(/_/g, '/').replace(/[^A-Za-z0-9+/]/g, '')
  const usable = clean.length % 4 === 1 ? clean.slice(0, -1) : clean
  const binary = atob(usable + '='.repeat((4 - (usable.length % 4)) % 4))
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

export class ShimBuffer extends Uint8Array {
  static override from(value: string | ArrayLike<number> | ArrayBufferLike | Iterable<number>, encoding?: Encoding | ((v: number, k: number) => number)): ShimBuffer {
    if (typeof value === 'string') {
      const enc = typeof encoding === 'string' ? encoding : 'utf8'
      if (enc === 'base64' || enc === 'base64url') return ShimBuffer.#wrap(fromBase64(value))
      if (enc === 'hex') return ShimBuffer.#wrap(Uint8Array.from(value.match(/../g) ?? [], (pair) => parseInt(pair, 16)))
      if (enc === 'latin1' || enc === 'binary') return ShimBuffer.#wrap(Uint8Array.from(value, (c) => c.charCodeAt(0) & 0xff))
      return ShimBuffer.#wrap(encoder.encode(value))
    }
    if (value instanceof ArrayBuffer) return ShimBuffer.#wrap(new Uint8Array(value.slice(0)))
    return ShimBuffer.#wrap(Uint8Array.from(value as ArrayLike<number>))
  }

  static alloc(size: number): ShimBuffer {
    return new ShimBuffer(size)
  }

  static isBuffer(value: unknown): value is ShimBuffer {
    return value instanceof ShimBuffer
  }

  static byteLength(text: string): number {
    return encoder.encode(text).length
  }

  static concat(list: readonly Uint8Array[], totalLength?: number): ShimBuffer {
    const size = totalLength ?? list.reduce((sum, chunk) => sum + chunk.length, 0)
    const out = new ShimBuffer(size)
    let offset = 0
    for (const chunk of list) {
      if (offset >= size) break
      out.set(chunk.subarray(0, size - offset), offset)
      offset += chunk.length
    }
    return out
  }

  static #wrap(bytes: Uint8Array): ShimBuffer {
    const out = new ShimBuffer(bytes.length)
    out.set(bytes)
    return out
  }

  override toString(encoding: Encoding = 'utf8', start = 0, end = this.length): string {
    const bytes = this.subarray(start, end)
    switch (encoding) {
      case 'hex':
        return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
      case 'base64':
        return btoa(toBinaryString(bytes))
      case 'base64url':
        return btoa(toBinaryString(bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
      case 'latin1':
      case 'binary':
        return toBinaryString(bytes)
      default:
        return decoder.decode(bytes)
    }
  }

  readBigUInt64BE(offset = 0): bigint {
    return new DataView(this.buffer, this.byteOffset, this.byteLength).getBigUint64(offset, false)
  }
}
