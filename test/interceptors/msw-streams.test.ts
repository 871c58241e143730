import { setupServer } from 'msw/node'
import { describe, expect, it } from 'vitest'
import { createStorm } from '../../src/engine/storm.js'
import { stormHandlers } from '../../src/interceptors/msw-handlers.js'
import { startModelUpstream } from '../helpers/model-upstream.js'
import { closing } from '../helpers/teardown.js'

async function read(response: Response): Promise<{ text: string; error: Error | null }> {
  let text = ''
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) text += Buffer.from(chunk).toString('utf8')
    return { text, error: null }
  } catch (error) {
    return { text, error: error as Error }
  }
}

describe('stream faults in MSW handlers', () => {
  it('cut a real event stream after `after` events: the body fails as "terminated"', async () => {
    const storm = createStorm({ rules: [{ name: 'cut', route: 'GET /ticks', kind: 'stream_cut', after: 2 }] })
    const upstream = closing(await startModelUpstream())
    const origin = upstream.url
    const server = closing(setupServer(...stormHandlers(storm, { filter: (url) => url.origin === origin })))
    server.listen({ onUnhandledRequest: 'error' })
    const { text, error } = await read(await fetch(`${origin}/ticks?count=4`))
    expect(text).toBe('data: {"tick":1}\n\ndata: {"tick":2}\n\n')
    expect(error?.message).toBe('terminated')
    expect(storm.report().calls[0]).toMatchObject({ injected: true, outcome: 'error', error: 'STREAM_CUT', cut: { events: 2 } })
  })

  it('deliver a slowed stream event by event, not at its end', async () => {
    const storm = createStorm({ rules: [{ name: 'slow', route: 'GET /ticks', kind: 'slow_stream', delay: 0.1 }] })
    const upstream = closing(await startModelUpstream())
    const origin = upstream.url
    const server = closing(setupServer(...stormHandlers(storm, { filter: (url) => url.origin === origin })))
    server.listen({ onUnhandledRequest: 'error' })
    const response = await fetch(`${origin}/ticks?count=4`)
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    await reader.read()
    const first = performance.now()
    while (!(await reader.read()).done);
    // Three more events, each held 100 ms: the first one was not held back until the end.
    expect(performance.now() - first).toBeGreaterThanOrEqual(290)
  })
})
