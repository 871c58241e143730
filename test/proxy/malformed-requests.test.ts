/**
 * Malformed requests that used to end the proxy process (`TypeError: Invalid URL`): each gets a
 * 4xx naming what was wrong, and the process, spawned as users run it, keeps serving.
 */
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startUpstream, type Upstream } from '../helpers/upstream.js'
import { startCli, type RunningCli } from '../ui/spawn-cli.js'

/** Send raw bytes; the reply up to the socket's close. */
export function rawExchange(port: number, bytes: string | Buffer, timeoutMs = 3000): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes))
    let reply = ''
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString('latin1')))
    socket.on('close', () => resolve(reply))
    socket.on('error', () => resolve(reply))
    socket.setTimeout(timeoutMs, () => socket.destroy())
  })
}

let upstream: Upstream
let reverse: RunningCli
let forward: RunningCli
const portOf = (cli: RunningCli) => Number(/^toolstorm proxy http:\/\/127\.0\.0\.1:(\d+) /.exec(cli.lines[0] ?? '')?.[1])

beforeAll(async () => {
  upstream = await startUpstream()
  ;[reverse, forward] = await Promise.all([
    startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0'], 1),
    startCli(['proxy', '--port', '0', '--admin-port', '0'], 1),
  ])
})
afterAll(async () => {
  await Promise.all([reverse?.stop(), forward?.stop()])
  await upstream?.close()
})

describe('malformed requests', () => {
  it.each([
    ['a Host with a space', 'GET /items/a HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n', 'the Host header \\"a b\\" is not a valid host[:port]'],
    ['an empty Host', 'GET /items/a HTTP/1.1\r\nHost: \r\nConnection: close\r\n\r\n', 'the Host header \\"\\" is not a valid host[:port]'],
    ['a Host with a port above 65535', 'GET /items/a HTTP/1.1\r\nHost: x:99999\r\nConnection: close\r\n\r\n', 'the Host header \\"x:99999\\" is not a valid host[:port]'],
  ])('reverse mode answers 400 to %s, naming it, and the process keeps serving', async (_name, bytes, named) => {
    const port = portOf(reverse)
    const reply = await rawExchange(port, bytes)
    expect(reply).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/)
    expect(reply).toContain(named)
    expect(reverse.child.exitCode).toBeNull()
    const after = await fetch(`http://127.0.0.1:${port}/items/a`)
    expect(after.status).toBe(200)
  })

  it('reverse mode forwards a path that starts with // as that path, to its target (not to a host named in the path)', async () => {
    const port = portOf(reverse)
    const before = upstream.requests.length
    const reply = await rawExchange(port, 'GET //x/items/a HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
    expect(reply).toMatch(/^HTTP\/1\.1 \d{3} /)
    expect(upstream.requests.slice(before).map((r) => r.url)).toEqual(['//x/items/a'])
    expect(reverse.child.exitCode).toBeNull()
  })

  it.each([
    ['an absolute-form target with a space in its host', 'GET http://a b/ HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n'],
    ['an absolute-form target with a port above 65535', 'GET http://x:99999/ HTTP/1.1\r\nHost: x:99999\r\nConnection: close\r\n\r\n'],
    ['a Host with a space', `GET ${'http://127.0.0.1:1/'} HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n`],
  ])('forward mode answers 4xx to %s and the process keeps serving', async (_name, bytes) => {
    const port = portOf(forward)
    const reply = await rawExchange(port, bytes)
    // A Host that differs from the absolute-form target is ignored (RFC 9112 §3.2.2), so the last case reaches the (closed) port 1: 502.
    expect(reply).toMatch(/^HTTP\/1\.1 (400 Bad Request|502 Bad Gateway)\r\n/)
    expect(forward.child.exitCode).toBeNull()
    const after = await rawExchange(port, `GET ${upstream.url}/items/a HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nConnection: close\r\n\r\n`)
    expect(after).toMatch(/^HTTP\/1\.1 200 OK\r\n/)
  })
})

describe('requests the parser refuses (#29)', () => {
  const bodyOf = (reply: string) => JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)) as { error: { type: string; code: string; message: string } }
  it.each([
    ['two Content-Length headers', 'GET /items/a HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n', 400, 'Duplicate Content-Length (HPE_UNEXPECTED_CONTENT_LENGTH)'],
    ['a header name with a space', 'GET /items/a HTTP/1.1\r\nHo st: x\r\n\r\n', 400, 'Invalid header token (HPE_INVALID_HEADER_TOKEN)'],
    ['no Host', 'GET /items/a HTTP/1.1\r\n\r\n', 400, 'an HTTP/1.1 request needs a Host header'],
    ['an unknown expectation', 'GET /items/a HTTP/1.1\r\nHost: localhost\r\nExpect: 200-ok\r\n\r\n', 417, '"Expect: 200-ok" is not supported (only 100-continue is)'],
    ['a head over 16 KiB', `GET /items/a HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`, 431, 'the request head is over 16384 bytes or 2000 lines'],
  ])('answers %s with the JSON error body naming what was wrong', async (_name, bytes, status, why) => {
    const reply = await rawExchange(portOf(reverse), bytes)
    expect(reply).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `))
    expect(reply).toContain('content-type: application/json')
    expect(bodyOf(reply)).toEqual({ error: { type: 'proxy_error', code: 'ERR_REQUEST_MALFORMED', message: `[toolstorm] Failed to read the request: ${why}. Send a well-formed HTTP/1.1 request.` } })
  })
})
