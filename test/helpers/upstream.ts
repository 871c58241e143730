/**
 * A real upstream for tests, on 127.0.0.1: it counts every request it receives and every
 * commit it makes, so a test can prove what reached it.
 */
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import https from 'node:https'
import zlib from 'node:zlib'
import type { AddressInfo, Socket } from 'node:net'

export interface SeenRequest {
  method: string
  url: string
  headers: http.IncomingHttpHeaders
  body: string
}

export interface Upstream {
  readonly url: string
  readonly port: number
  /** Every request received, in order. */
  readonly requests: SeenRequest[]
  /** Shipments committed by `POST /ship`. */
  readonly commits: string[]
  hits(path?: string): number
  close(): Promise<void>
}

export interface UpstreamOptions {
  /** Called at the commit point of `POST /ship`, before the response is sent. */
  onCommit?: (name: string, key: string, request: http.IncomingMessage) => Promise<void> | void
  /** Serve HTTPS with this key and certificate (PEM) instead of HTTP. */
  tls?: { key: string; cert: string }
}

/** Random bytes `GET /bytes/N` answers the first N of (binary, with a content-length). */
export const BYTES = randomBytes(4 * 1024 * 1024)

export const ITEM = { id: 'sku-1', name: 'Cloud', price: 12.5, available: true, tags: ['a', 'b'], stock: { warehouse: 'AMS-01', count: 3 } }

export async function startUpstream(options: UpstreamOptions = {}): Promise<Upstream> {
  const requests: SeenRequest[] = []
  const commits: string[] = []
  const listener: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8')
        requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body })
        // Joined as text: a path such as `//x:99999/` (the proxy forwards it as is) names no host here.
        const url = new URL(`http://upstream${req.url ?? '/'}`)
        const json = (status: number, value: unknown, headers: http.OutgoingHttpHeaders = {}) => {
          const text = JSON.stringify(value)
          res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers })
          res.end(text)
        }
        if (url.pathname.startsWith('/items/')) return json(200, { ...ITEM, id: decodeURIComponent(url.pathname.slice(7)) })
        if (url.pathname === '/ship' && req.method === 'POST') {
          let order = 'order-1'
          try {
            order = (JSON.parse(body || '{}') as { order?: string }).order ?? order
          } catch {
            // keep the default order
          }
          commits.push(order)
          await options.onCommit?.('shipment', order, req)
          return json(201, { shipment: commits.length, order })
        }
        if (url.pathname === '/v1/chat/completions' && req.method === 'POST') {
          const request = JSON.parse(body || '{}') as { model?: string; user?: string }
          commits.push(request.user ?? 'anonymous')
          await options.onCommit?.('completion', request.user ?? 'anonymous', req)
          return json(200, {
            id: `chatcmpl-${commits.length}`,
            object: 'chat.completion',
            created: 0,
            model: request.model ?? 'gpt-test',
            choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'ok' } }],
            usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
          })
        }
        if (url.pathname === '/fail') return json(500, { error: 'boom: sensitive exception message' })
        if (url.pathname === '/busy') return json(429, { error: 'busy' }, { 'retry-after': '2' })
        if (url.pathname === '/text') {
          res.writeHead(200, { 'content-type': 'text/plain' })
          return res.end('plain text, not json')
        }
        if (url.pathname === '/gzip') {
          const gz = zlib.gzipSync(JSON.stringify(ITEM))
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': gz.length })
          return res.end(gz)
        }
        if (url.pathname === '/echo') return json(200, { method: req.method, headers: req.headers, body })
        const bytes = /^\/bytes\/(\d+)$/.exec(url.pathname)
        if (bytes) {
          const body = BYTES.subarray(0, Number(bytes[1]))
          res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length })
          return res.end(body)
        }
        if (url.pathname === '/slow') {
          const ms = Number(url.searchParams.get('ms') ?? 200)
          await new Promise((resolve) => setTimeout(resolve, ms))
          return json(200, { waited: ms })
        }
        return json(404, { error: 'not found' })
      })()
    })
  }
  const server = options.tls ? https.createServer(options.tls, listener) : http.createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    requests,
    commits,
    hits: (path) => (path === undefined ? requests.length : requests.filter((r) => new URL(r.url, 'http://u').pathname === path).length),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/**
 * A server that resets every connection after reading the request (the real failure to compare
 * with), or with `close` closes it (FIN) without a byte of answer; with `tls`, over HTTPS.
 * `received`: `METHOD /path body` of each request.
 */
export async function startResettingServer(options: { close?: boolean; tls?: { key: string; cert: string } } = {}): Promise<{ url: string; received: string[]; close(): Promise<void> }> {
  const received: string[] = []
  const listener: http.RequestListener = (req) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk))
    req.on('end', () => {
      received.push(`${req.method} ${req.url} ${body}`)
      if (options.close) return void req.socket.destroy()
      // Under TLS the TCP socket beneath is the one reset.
      ;((req.socket as { _parent?: Socket })._parent ?? req.socket).resetAndDestroy()
    })
  }
  const server = options.tls ? https.createServer(options.tls, listener) : http.createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
