/**
 * A client that pipelines many requests and reads nothing costs the proxy O(1): the next exchange
 * starts only once the client's socket took the previous response, so the upstream sees a bounded
 * number of requests and connections, and every answer still arrives, in order, once it reads.
 * (Memory is measured in bench/, `npm run bench -- pipelining`.)
 */
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { closing, closingServer } from '../helpers/teardown.js'

const REQUESTS = 500
const BODY = Buffer.alloc(64 * 1024, 'a')

describe('pipelining bound', () => {
  it('reaches the upstream a bounded number of times for a client that pipelines 500 GETs and reads nothing, then answers all 500 in order', async () => {
    let requests = 0
    let connections = 0
    const upstream = closingServer(
      http.createServer((req, res) => {
        requests++
        res.writeHead(200, { 'content-length': BODY.length, 'x-path': req.url })
        res.end(BODY)
      }),
    )
    upstream.on('connection', () => connections++)
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    const proxy = closing(await startProxy({ targets: [`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`] }))

    const socket = net.connect(Number(new URL(proxy.url).port), '127.0.0.1')
    onTestFinished(() => void socket.destroy())
    socket.pause()
    await new Promise((resolve) => socket.once('connect', resolve))
    let heads = ''
    for (let i = 0; i < REQUESTS; i++) heads += `GET /${i} HTTP/1.1\r\nHost: localhost\r\n\r\n`
    socket.write(heads)
    // A negative (how far the proxy goes for a client that reads nothing): no event marks "no more",
    // so the stall lasts a fixed while.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    // What loopback's socket buffers absorb (a few MiB) plus the one response in flight; before
    // the bound, every pipelined request went upstream, on a connection of its own.
    const seenWhileStalled = requests
    expect(seenWhileStalled).toBeLessThan(150)
    expect(connections).toBeLessThanOrEqual(2)

    const paths: string[] = []
    let text = ''
    await new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1')
        for (let at = text.indexOf('x-path: '); at !== -1; at = text.indexOf('x-path: ')) {
          const end = text.indexOf('\r\n', at)
          if (end === -1) break
          paths.push(text.slice(at + 8, end))
          text = text.slice(end)
        }
        // Keep only a tail: the bodies are not needed.
        if (text.length > 4096 && text.indexOf('x-path: ') === -1) text = text.slice(-16)
        if (paths.length === REQUESTS) resolve()
      })
      socket.resume()
    })
    expect(paths).toEqual(Array.from({ length: REQUESTS }, (_, i) => `/${i}`))
    expect(requests).toBe(REQUESTS)
    expect(connections).toBeLessThanOrEqual(2)
  }, 30_000)
})
