/**
 * The proxy forwards an exchange no fault and no observer wants in one go (the socket sink's
 * pass-through over the live pool), also now that every exchange enters through the engine's
 * front door with the default plug-ins (MCP, model calls). A plug-in that wraps the transport
 * counts which exchanges took it: the extension point a user has, not a mock of ours.
 */
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
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

describe('the fast path relays the upstream head and body byte for byte', () => {
  it('on either side of the one-write size (a small answer leaves as one buffer, head and body), latin1 header values included', async () => {
    const sizes = [0, 64, 16 * 1024, 16 * 1024 + 1, 64 * 1024]
    const upstream = http.createServer((req, res) => {
      const size = Number(req.url?.slice(1))
      res.writeHead(200, { 'x-name': 'caf\u00e9 \u00ff', 'content-length': size })
      res.end(Buffer.alloc(size, size % 251))
    })
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    onTestFinished(() => new Promise<void>((resolve) => upstream.close(() => resolve())))
    const { url, taken } = await proxyFor(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`)
    // One kept-alive connection, raw bytes: what a client really receives.
    const socket = net.connect(Number(new URL(url).port), '127.0.0.1')
    onTestFinished(() => void socket.destroy())
    let received = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])))
    for (const size of sizes) {
      received = Buffer.alloc(0)
      socket.write(`GET /${size} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`)
      await expect.poll(() => {
        const end = received.indexOf('\r\n\r\n')
        return end !== -1 && received.length >= end + 4 + size
      }).toBe(true)
      const end = received.indexOf('\r\n\r\n')
      const head = received.subarray(0, end).toString('latin1')
      expect(head).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
      expect(head).toContain('\r\nx-name: caf\u00e9 \u00ff\r\n')
      expect(head).toContain(`\r\ncontent-length: ${size}\r\n`)
      expect(received.subarray(end + 4).equals(Buffer.alloc(size, size % 251))).toBe(true)
    }
    expect(taken.get(`GET /${sizes.at(-1)}`)).toBe(1)
  })
})
