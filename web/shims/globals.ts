/**
 * Globals the engine expects from Node: `Buffer` (body reading, redaction) and `setImmediate`
 * (the virtual clock yields with it). Import this module first.
 */
import { ShimBuffer } from './buffer.js'

const scope = globalThis as Record<string, unknown>

if (typeof scope.Buffer === 'undefined') scope.Buffer = ShimBuffer

if (typeof scope.setImmediate === 'undefined') {
  // A message port fires after pending work like setImmediate; setTimeout(0) would be clamped to 4 ms.
  const queue: Array<() => void> = []
  const channel = new MessageChannel()
  channel.port1.onmessage = () => queue.shift()?.()
  scope.setImmediate = (callback: () => void) => {
    queue.push(callback)
    channel.port2.postMessage(null)
  }
}
