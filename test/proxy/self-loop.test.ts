/**
 * Forward mode never relays a request to the server's own ports, however the client spells this
 * machine (issue #14, item 4): 508, as for 127.0.0.1. Other ports on loopback are relayed.
 * A request addressed to the data plane itself, as HTTP_PROXY clients send base-URL requests
 * (absolute-form, or Node's CONNECT), is served as if it came directly when the server routes it
 * (a --target, a cassette) rather than sending it back to itself (issue #22, item 1).
 */
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import { describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { createSelfCheck } from '../../src/proxy/self-address.js'
import { exchangeAt } from '../helpers/cassette-fixtures.js'
import { freePort } from '../helpers/redis-server.js'
import { startUpstream } from '../helpers/upstream.js'
import { closing } from '../helpers/teardown.js'

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
    const proxy = closing(await startProxy({}))
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
    const upstream = closing(await startUpstream())
    const proxy = closing(await startProxy({}))
    const port = new URL(upstream.url).port
    for (const host of ['127.0.0.1', '0x7f.1', 'localhost']) expect((await viaProxy(proxy.url, `http://${host}:${port}/items/a`)).status).toBe(200)
  })

  it('refuses a CONNECT to its own ports by any spelling', async () => {
    const proxy = closing(await startProxy({}))
    const port = new URL(proxy.adminUrl).port
    for (const host of ['0x7f.1', '0.0.0.0', '[::ffff:127.0.0.1]', '[::]']) expect(await connectStatus(proxy.url, `${host}:${port}`)).toBe('HTTP/1.1 403 Forbidden')
  })

  it.each(['0.0.0.0', '[::ffff:127.0.0.1]', '0x7f.1'])('the replay server answers 508 to a request for its admin port at %s', async (host) => {
    const replay = closing(await startReplayServer(Cassette.from({}, []), { mode: 'passthrough-unmatched' }))
    const { status, body } = await viaProxy(replay.url, `http://${host}:${new URL(replay.adminUrl).port}/report`)
    expect(status).toBe(508)
    expect(JSON.parse(body).error.message).toContain('is this replay server itself')
  })
})

/** Open a CONNECT tunnel to `authority` through `serverUrl`, then send `GET path` inside it; the status lines (tunnel, then response) and the body. */
function throughTunnel(serverUrl: string, authority: string, path: string): Promise<{ tunnel: string; status: string; body: string }> {
  const { hostname, port } = new URL(serverUrl)
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`))
    let text = ''
    let tunnel = ''
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1')
      if (!tunnel) {
        const end = text.indexOf('\r\n\r\n')
        if (end < 0) return
        tunnel = text.slice(0, text.indexOf('\r\n'))
        text = text.slice(end + 4)
        if (!tunnel.includes(' 200 ')) return resolve({ tunnel, status: '', body: text })
        socket.write(`GET ${path} HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`)
      }
    })
    socket.on('end', () => resolve({ tunnel, status: text.slice(0, text.indexOf('\r\n')), body: text.slice(text.indexOf('\r\n\r\n') + 4) }))
    socket.on('error', reject)
  })
}

describe('requests addressed to the server itself (HTTP_PROXY clients calling the base URL)', () => {
  it.each(['127.0.0.1', 'localhost', '0x7f.1'])('a reverse proxy serves an absolute-form request for its own data plane at %s from its target', async (host) => {
    const upstream = closing(await startUpstream())
    const forward = closing(await startProxy({ targets: [upstream.url] }))
    const { status, body } = await viaProxy(forward.url, `http://${host}:${new URL(forward.url).port}/items/self`)
    expect(status).toBe(200)
    expect(JSON.parse(body).id).toBe('self')
    expect(forward.storm.report().calls.map((call) => [call.route, call.url])).toEqual([['GET /items/self', `http://${host === '0x7f.1' ? '127.0.0.1' : host}:${new URL(forward.url).port}/items/self`]])
  })

  it('a reverse proxy routes such a request by its path to a named target, and refuses another host naming what to do', async () => {
    const upstream = closing(await startUpstream())
    const proxy = closing(await startProxy({ targets: [`shop=${upstream.url}`] }))
    const own = `http://127.0.0.1:${new URL(proxy.url).port}`
    expect((await viaProxy(proxy.url, `${own}/shop/items/a`)).status).toBe(200)
    expect((await viaProxy(proxy.url, `${own}/other/items/a`)).status).toBe(404)
    const other = await viaProxy(proxy.url, `${upstream.url}/items/a`)
    expect(other.status).toBe(400)
    expect(JSON.parse(other.body).error.message).toContain(`Failed to route "${upstream.url}/items/a": this proxy runs in reverse mode (--target) and serves requests for its own address only`)
    expect(upstream.hits()).toBe(1)
  })

  it('a run address reached through HTTP_PROXY names its run: /_run/<id>/ on a reverse proxy, /_run/<id>/http/<host>/ on a forward one', async () => {
    const upstream = closing(await startUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.url] }))
    expect((await viaProxy(proxy.url, `${proxy.url}/_run/r1/items/a`)).status).toBe(200)
    expect(proxy.storm.report('r1').calls.map((call) => call.route)).toEqual(['GET /items/a'])
    await proxy.close()
    const forward = closing(await startProxy({}))
    const upstreamHost = new URL(upstream.url).host
    expect((await viaProxy(forward.url, `${forward.url}/_run/r2/http/${upstreamHost}/items/b`)).status).toBe(200)
    expect(forward.storm.report('r2').calls.map((call) => call.url)).toEqual([`${upstream.url}/items/b`])
    // A run address that names this proxy again would loop.
    expect((await viaProxy(forward.url, `${forward.url}/_run/r2/http/${new URL(forward.url).host}/items/c`)).status).toBe(508)
  })

  it('a reverse proxy still answers 508 to an absolute-form request for its admin API', async () => {
    const upstream = closing(await startUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.url] }))
    const { status, body } = await viaProxy(proxy.url, `http://127.0.0.1:${new URL(proxy.adminUrl).port}/report`)
    expect(status).toBe(508)
    expect(JSON.parse(body).error.message).toContain('is this proxy itself (its admin API')
    expect(upstream.hits()).toBe(0)
  })

  it('a forward proxy answers 508 to a request for its own data plane: it has nothing to route it to', async () => {
    const proxy = closing(await startProxy({}))
    const own = new URL(proxy.url)
    const { status, body } = await viaProxy(proxy.url, `http://localhost:${own.port}/items/a`)
    expect(status).toBe(508)
    expect(JSON.parse(body).error.message).toBe(`[toolstorm] Refused to forward a request to localhost:${own.port}: that is this proxy itself (its data plane, by a name of this machine), and in forward mode it would send the request back to itself. Request the upstream's own URL (HTTP_PROXY sends it here), or start the proxy with --target URL to use its address as a base URL.`)
  })

  it('a proxy whose --target is itself answers 508 instead of looping', async () => {
    const port = await freePort()
    const proxy = closing(await startProxy({ port, targets: [`http://localhost:${port}`] }))
    const response = await fetch(`${proxy.url}/items/a`)
    expect(response.status).toBe(508)
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain('(--target names it), so every request would loop')
  })

  it('the replay server serves an absolute-form request for its own data plane from the cassette', async () => {
    const replay = closing(await startReplayServer(Cassette.from({}, [exchangeAt(1)])))
    const { status, body } = await viaProxy(replay.url, `http://127.0.0.1:${new URL(replay.url).port}/items/1`)
    expect(status).toBe(200)
    expect(body).toBe('{"id":1}')
    expect(replay.verdict().passed).toBe(true)
  })

  it('in passthrough mode, such a request that matches nothing is refused, never forwarded to the server itself', async () => {
    const replay = closing(await startReplayServer(Cassette.from({}, []), { mode: 'passthrough-unmatched' }))
    const { status, body } = await viaProxy(replay.url, `http://127.0.0.1:${new URL(replay.url).port}/items/9`)
    expect(status).toBe(400)
    expect(JSON.parse(body).error.message).toContain('it names no upstream')
  })

  it('a CONNECT to its own data plane is served inside the tunnel (Node\'s NODE_USE_ENV_PROXY): reverse proxy and replay server', async () => {
    const upstream = closing(await startUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.url] }))
    const viaReverse = await throughTunnel(proxy.url, `127.0.0.1:${new URL(proxy.url).port}`, '/items/tunnel')
    expect([viaReverse.tunnel, viaReverse.status, JSON.parse(viaReverse.body).id]).toEqual(['HTTP/1.1 200 Connection Established', 'HTTP/1.1 200 OK', 'tunnel'])
    const replay = closing(await startReplayServer(Cassette.from({}, [exchangeAt(1)])))
    const viaReplay = await throughTunnel(replay.url, `localhost:${new URL(replay.url).port}`, '/items/1')
    expect([viaReplay.tunnel, viaReplay.status, viaReplay.body]).toEqual(['HTTP/1.1 200 Connection Established', 'HTTP/1.1 200 OK', '{"id":1}'])
  })

  it('a CONNECT to another host through a reverse proxy is refused with a reason, and one to its own port through a forward proxy with 403', async () => {
    const upstream = closing(await startUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.url] }))
    const refused = await throughTunnel(proxy.url, 'example.com:443', '/')
    expect(refused.tunnel).toBe('HTTP/1.1 400 Bad Request')
    expect(refused.body).toContain('runs in reverse mode (--target) and serves its own address only')
    await proxy.close()
    const forward = closing(await startProxy({}))
    expect(await connectStatus(forward.url, `127.0.0.1:${new URL(forward.url).port}`)).toBe('HTTP/1.1 403 Forbidden')
  })
})
