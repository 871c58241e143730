/**
 * The proxy forwards an exchange no fault and no observer wants in one go (the socket sink's
 * pass-through over the live pool), also now that every exchange enters through the engine's
 * front door with the default plug-ins (MCP, model calls). A plug-in that wraps the transport
 * counts which exchanges took it: the extension point a user has, not a mock of ours.
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { defaultPlugins } from '../../src/default-plugins.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { startModelUpstream } from '../helpers/model-upstream.js'
import { passThroughCounter } from '../helpers/pass-through-counter.js'
import { startUpstream } from '../helpers/upstream.js'

async function proxyFor(target: string, config: StormConfigInput = {}) {
  const counter = passThroughCounter()
  const proxy = await startProxy({ targets: [target], config, plugins: [...defaultPlugins(), counter.plugin] })
  onTestFinished(() => proxy.close())
  return { url: proxy.url, taken: counter.taken }
}

describe('the proxy fast path', () => {
  it('is taken by an exchange no fault and no observer wants', async () => {
    const upstream = await startUpstream()
    onTestFinished(() => upstream.close())
    const { url, taken } = await proxyFor(upstream.url)
    const answer = await fetch(`${url}/items/1`)
    expect(answer.status).toBe(200)
    await answer.arrayBuffer()
    expect(taken.get('GET /items/1')).toBe(1)
  })

  it('is left for a model call (the model-call plug-in observes it) and for an exchange a rule touches', async () => {
    const upstream = await startModelUpstream()
    onTestFinished(() => upstream.close())
    const { url, taken } = await proxyFor(upstream.url, { rules: [{ name: 'slow', route: 'GET /ticks', kind: 'latency', delay: 0.01 }] })
    const chat = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [] }) })
    expect(chat.status).toBe(200)
    await chat.json()
    const ticks = await fetch(`${url}/ticks`)
    await ticks.arrayBuffer()
    const other = await fetch(`${url}/other`)
    await other.arrayBuffer()
    expect(Object.fromEntries(taken)).toEqual({ 'GET /other': 1 })
  })
})
