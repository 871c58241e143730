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

/** Read server-sent events from `GET /events` until `until` says stop, or `timeoutMs` passed (then the events so far). */
export async function readEvents(client: AdminClient, run: string, until: (events: StreamEvent[]) => boolean, timeoutMs = 5000): Promise<StreamEvent[]> {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(), timeoutMs)
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
  }
  clearTimeout(timer)
  controller.abort()
  return events
}
