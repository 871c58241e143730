/** Read the dashboard's server-sent events (`GET /events?run=`) through the admin API, as the page does. */
import { expect } from 'vitest'

export interface StreamEvent {
  event: string
  data: unknown
}

/** Anything that calls the admin API with its token (a `Proxied`, or a wrapper around a proxy). */
export interface AdminClient {
  admin(path: string, init?: RequestInit): Promise<Response>
}

/** An open `GET /events` stream: `opened` once its first event (the snapshot) arrived, `events` when `until` says stop. */
export interface EventStream {
  opened: Promise<void>
  events: Promise<StreamEvent[]>
}

/**
 * Open `GET /events` and read until `until` says stop, or `timeoutMs` passed (then the events so far).
 * Await `opened` before causing what the stream should show: the snapshot is the subscription's
 * start, so anything done earlier may land in the snapshot instead of a batch.
 */
export function openEvents(client: AdminClient, run: string, until: (events: StreamEvent[]) => boolean, timeoutMs = 5000): EventStream {
  let markOpened!: () => void
  const opened = new Promise<void>((resolve) => (markOpened = resolve))
  const events = (async () => {
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), timeoutMs)
    try {
      const response = await client.admin(`/events?run=${run}`, { signal: controller.signal })
      expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
      const events: StreamEvent[] = []
      let buffer = ''
      while (!until(events)) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }))
        if (done) break
        buffer += value
        let end: number
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const event = /^event: (.*)$/m.exec(block)?.[1]
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (event && data) events.push({ event, data: JSON.parse(data) })
        }
        if (events.length > 0) markOpened()
      }
      return events
    } finally {
      markOpened()
      clearTimeout(timer)
      controller.abort()
    }
  })()
  return { opened, events }
}
