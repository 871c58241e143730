/**
 * Forward mode never relays a request to the server's own ports, however the client spells this
 * machine (issue #14, item 4): 508, as for 127.0.0.1. Other ports on loopback are relayed.
 */
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import { afterEach, describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/cassette.js'
import { startReplayServer, type ReplayServer } from '../../src/cassette/replay-server.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { createSelfCheck } from '../../src/proxy/self-address.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'

let proxy: ProxyServer | null = null
let replay: ReplayServer | null = null
let upstream: Upstream | null = null
afterEach(async () => {
  await proxy?.close()
  await replay?.close()
  await upstream?.close()
  proxy = replay = upstream = null
})

/** Hosts that all name this machine, as a client may write them in a URL. */
const SPELLINGS = ['127.0.0.1', 'localhost', 'LOCALHOST.', 'api.localhost', '127.0.0.2', '127.1', '2130706433', '0x7f.1', '0177.0.0.1', '0.0.0.0', '0', '[::1]', '[::]', '[::ffff:127.0.0.1]', '[0:0:0:0:0:ffff:7f00:1]']

/** Send `GET <absolute url>` to a forward proxy; the status and body it answers. */
function viaProxy(proxyUrl: string, url: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(proxyUrl)
  return new Promise((resolve, reject) => {
    http
      .get({ host: hostname, port, path: url, agent: false }, (res) => {
        let body = ''
        res.on('data', (chunk: Buffer) => (body += chunk.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      })
      .on('error', reject)
  })
}

/** The status line a CONNECT to `authority` gets. */
function connectStatus(proxyUrl: string, authority: string): Promise<string> {
  const { hostname, port } = new URL(proxyUrl)
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`))
    socket.once('data', (chunk: Buffer) => {
      resolve(chunk.toString('latin1').split('\r\n')[0] as string)
      socket.destroy()
    })
    socket.on('error', () => resolve('error'))
  })
}

describe('self-loop detection in forward mode', () => {
  it.each(SPELLINGS)('the proxy answers 508 to a request for its admin and data-plane ports at %s', async (host) => {
    proxy = await startProxy({})
    for (const own of [proxy.adminUrl, proxy.url]) {
      const port = new URL(own).port
      const { status, body } = await viaProxy(proxy.url, `http://${host}:${port}/rules`)
      expect(status).toBe(508)
      expect(JSON.parse(body).error.message).toContain(`is this proxy itself`)
    }
  })

  // Checked on the self-check itself: a test listens on loopback only and never sends to another interface.
  const external = Object.values(os.networkInterfaces()).flat().find((info) => info?.family === 'IPv4' && !info.internal)?.address
  it.skipIf(external === undefined)('listening on 0.0.0.0, the proxy counts this machine\'s other addresses and host name as itself', () => {
    const isSelf = createSelfCheck('0.0.0.0', new Set(['8788']))
    expect(isSelf(new URL(`http://${external}:8788/rules`))).toBe(true)
    expect(isSelf(new URL(`http://${os.hostname()}:8788/rules`))).toBe(true)
    expect(isSelf(new URL(`http://${external}:8789/rules`))).toBe(false)
    // Listening on loopback only, another interface is not this server.
    expect(createSelfCheck('127.0.0.1', new Set(['8788']))(new URL(`http://${external}:8788/rules`))).toBe(false)
  })

  it('relays a request to another port on loopback', async () => {
    upstream = await startUpstream()
    proxy = await startProxy({})
    const port = new URL(upstream.url).port
    for (const host of ['127.0.0.1', '0x7f.1', 'localhost']) expect((await viaProxy(proxy.url, `http://${host}:${port}/items/a`)).status).toBe(200)
  })

  it('refuses a CONNECT to its own ports by any spelling', async () => {
    proxy = await startProxy({})
    const port = new URL(proxy.adminUrl).port
    for (const host of ['0x7f.1', '0.0.0.0', '[::ffff:127.0.0.1]', '[::]']) expect(await connectStatus(proxy.url, `${host}:${port}`)).toBe('HTTP/1.1 403 Forbidden')
  })

  it.each(['0.0.0.0', '[::ffff:127.0.0.1]', '0x7f.1'])('the replay server answers 508 to a request for its admin port at %s', async (host) => {
    replay = await startReplayServer(Cassette.from({}, []), { mode: 'passthrough-unmatched' })
    const { status, body } = await viaProxy(replay.url, `http://${host}:${new URL(replay.adminUrl).port}/report`)
    expect(status).toBe(508)
    expect(JSON.parse(body).error.message).toContain('is this replay server itself')
  })
})
