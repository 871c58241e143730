/**
 * The admin API's server-sent events, read with `fetch` so the token travels in the
 * Authorization header (EventSource cannot send one). One connection; it reconnects with
 * backoff after a drop, and stops for good on 401.
 */
import type { StreamBatch, StreamSnapshot } from '../../src/proxy/admin/events.js'
import type { AdminClient } from './admin-client.js'

export type ConnectionState = 'connecting' | 'live' | 'reconnecting' | 'unauthorized'

export interface StreamHandlers {
  snapshot(snapshot: StreamSnapshot): void
  batch(batch: StreamBatch): void
  state(state: ConnectionState): void
}

const MAX_BACKOFF_MS = 10_000

/** Open the stream for `run`; returns a function that closes it. */
export function openEventStream(client: AdminClient, run: string, handlers: StreamHandlers): () => void {
  const controller = new AbortController()
  let backoff = 500
  const connect = async (): Promise<void> => {
    handlers.state('connecting')
    try {
      const response = await client.request('GET', `/events?run=${encodeURIComponent(run)}`, { signal: controller.signal })
      if (response.status === 401) {
        handlers.state('unauthorized')
        return
      }
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`)
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      let buffer = ''
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        buffer += value
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          dispatch(block, handlers)
          backoff = 500
          handlers.state('live')
        }
      }
    } catch {
      if (controller.signal.aborted) return
    }
    if (controller.signal.aborted) return
    handlers.state('reconnecting')
    await new Promise((resolve) => setTimeout(resolve, backoff))
    backoff = Math.min(MAX_BACKOFF_MS, backoff * 2)
    if (!controller.signal.aborted) return connect()
  }
  void connect()
  return () => controller.abort()
}

function dispatch(block: string, handlers: StreamHandlers): void {
  let event = 'message'
  const data: string[] = []
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue
    if (line.startsWith('event:')) event = line.slice(6).trim()
    else if (line.startsWith('data:')) data.push(line.slice(5).trimStart())
  }
  if (!data.length) return
  const payload: unknown = JSON.parse(data.join('\n'))
  if (event === 'snapshot') handlers.snapshot(payload as StreamSnapshot)
  else if (event === 'batch') handlers.batch(payload as StreamBatch)
}
