/**
 * `node:zlib` for the browser build. The lab's service never compresses its answers; a body that
 * does not decode is relayed as it came (see src/engine/body.ts), so failing is the right answer.
 */
type Callback = (error: Error | null, result?: Uint8Array) => void

function unavailable(_input: Uint8Array, callback: Callback): void {
  queueMicrotask(() => callback(new Error('Failed to decompress in the browser lab: no zlib here.')))
}

export const gunzip = unavailable
export const inflate = unavailable
export const brotliDecompress = unavailable

export default { gunzip, inflate, brotliDecompress }
