/**
 * A dispatcher from undici 8, which users install today and Node 26 bundles, passed to toolstorm
 * (pinned to undici 7 while it supports Node 20): in-process interception (`intercept()`, MSW
 * handlers) and the proxy forward through it, and faults still fire. undici 8 needs Node 22.19 or
 * later; on Node 20 it cannot load, and the file says so.
 */
import { setupServer } from 'msw/node'
import { describe, expect, it } from 'vitest'
import { createStorm } from '../../src/create-storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { stormHandlers } from '../../src/interceptors/msw-handlers.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { closing } from '../helpers/teardown.js'
import { startUpstream } from '../helpers/upstream.js'

const [major = 0, minor = 0] = process.versions.node.split('.').map(Number)
const canLoad = major > 22 || (major === 22 && minor >= 19)

/** An undici 8 Agent that marks what it sends, so the upstream shows the user's dispatcher carried it. */
async function usersDispatcher() {
  const undici8 = await import('undici-8')
  expect(undici8.Agent.name).toBe('Agent')
  const marking: import('undici-8').Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) =>
    dispatch({ ...options, headers: { ...(options.headers as Record<string, string>), 'x-dispatcher': 'undici-8' } }, handler)
  const agent = new undici8.Agent()
  closing({ close: () => agent.close() })
  return agent.compose(marking)
}

/** The second call to an item is answered 429 by the storm, before the upstream. */
const rules = () => [{ name: 'limited', route: 'GET /items/*', kind: 'rate_limit', calls: [2], delay: 0.05 }]

describe.skipIf(!canLoad)(`a user's undici 8 dispatcher (Node ${process.versions.node})`, () => {
  it('carries intercept()\'s forwarded calls, and the rule still answers the second call with a 429', async () => {
    const upstream = closing(await startUpstream())
    const storm = createStorm({ seed: 1, rules: rules() })
    closing(intercept(storm, { dispatcher: await usersDispatcher(), filter: (url) => url.origin === upstream.url }))
    const first = await fetch(`${upstream.url}/items/sku-1`)
    expect([first.status, (await first.json() as { id: string }).id]).toEqual([200, 'sku-1'])
    expect((await fetch(`${upstream.url}/items/sku-1`)).status).toBe(429)
    expect(upstream.requests.map((request) => [request.url, request.headers['x-dispatcher']])).toEqual([['/items/sku-1', 'undici-8']])
    expect(storm.report().calls.map((call) => [call.status])).toEqual([[200], [429]])
  })

  it('carries the MSW handlers\' forwarded calls', async () => {
    const upstream = closing(await startUpstream())
    const storm = createStorm({ seed: 1, rules: rules() })
    const server = closing(setupServer(...stormHandlers(storm, { dispatcher: await usersDispatcher(), filter: (url) => url.origin === upstream.url })))
    server.listen({ onUnhandledRequest: 'bypass' })
    expect((await fetch(`${upstream.url}/items/sku-1`)).status).toBe(200)
    expect((await fetch(`${upstream.url}/items/sku-1`)).status).toBe(429)
    expect(upstream.requests.map((request) => request.headers['x-dispatcher'])).toEqual(['undici-8'])
  })

  it('carries the proxy\'s upstream calls (startProxy({ dispatcher }))', async () => {
    const upstream = closing(await startUpstream())
    const storm = createStorm({ seed: 1, rules: rules() })
    const proxy = closing(await startProxy({ storm, targets: [upstream.url], dispatcher: await usersDispatcher(), port: 0, adminPort: 0 }))
    expect((await fetch(`${proxy.url}/items/sku-1`)).status).toBe(200)
    expect((await fetch(`${proxy.url}/items/sku-1`)).status).toBe(429)
    expect(upstream.requests.map((request) => request.headers['x-dispatcher'])).toEqual(['undici-8'])
  })
})
