/**
 * `node:crypto` for the browser build: SHA-256 (`@noble/hashes`) and `crypto.getRandomValues`.
 * Only what the engine imports: `createHash('sha256')` and `randomBytes`.
 */
import { sha256 } from '@noble/hashes/sha2.js'
import { ShimBuffer } from './buffer.js'

const encoder = new TextEncoder()

export interface Hash {
  update(data: string | Uint8Array, encoding?: string): Hash
  digest(): ShimBuffer
  digest(encoding: 'hex' | 'base64' | 'base64url'): string
}

export function createHash(algorithm: string): Hash {
  if (algorithm !== 'sha256') throw new Error(`Failed to hash in the browser: only sha256 is available, not "${algorithm}".`)
  const state = sha256.create()
  const hash: Hash = {
    update(data) {
      state.update(typeof data === 'string' ? encoder.encode(data) : data)
      return hash
    },
    digest(encoding?: 'hex' | 'base64' | 'base64url') {
      const bytes = ShimBuffer.from(state.digest())
      return (encoding ? bytes.toString(encoding) : bytes) as ShimBuffer & string
    },
  }
  return hash
}

export function randomBytes(size: number): ShimBuffer {
  const bytes = ShimBuffer.alloc(size)
  // getRandomValues fills at most 65,536 bytes per call.
  for (let offset = 0; offset < size; offset += 65_536) crypto.getRandomValues(bytes.subarray(offset, Math.min(size, offset + 65_536)))
  return bytes
}

export default { createHash, randomBytes }
