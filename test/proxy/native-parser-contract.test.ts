/**
 * The contract the data plane (src/proxy/http1/wire-server.ts, src/proxy/upstream/upstream-pool.ts) relies
 * on from Node's internal HTTPParser. It is not public API, so .ci/run runs this file on every
 * Node line toolstorm supports (20, 22, 24, 26): a Node release that changes it fails here first.
 */
import { describe, expect, it } from 'vitest'
import { HTTPParser, METHODS, type NativeParser } from '../../src/proxy/http1/native-parser.js'

interface Head {
  major: number
  minor: number
  headers: string[]
  method: string | undefined
  url: string
  status: number
  upgrade: boolean
  keepAlive: boolean
}

interface Recorder {
  parser: NativeParser
  heads: Head[]
  bodies: Buffer[]
  completed: number
  headerBatches: number
}

/** A parser whose callbacks record what they get, as the data plane reads them. */
function recorder(type: number, answer: (head: Head) => number = () => 0, maxHeaderSize = 16 * 1024): Recorder {
  const parser = new HTTPParser()
  parser.initialize(type, {}, maxHeaderSize, 0)
  const state: Recorder = { parser, heads: [], bodies: [], completed: 0, headerBatches: 0 }
  let pending: string[] = []
  let pendingUrl = ''
  parser[HTTPParser.kOnHeaders] = (headers: string[], url: string) => {
    state.headerBatches++
    pending.push(...headers)
    pendingUrl += url
  }
  parser[HTTPParser.kOnHeadersComplete] = (major: number, minor: number, headers: string[] | undefined, method: number, url: string | undefined, status: number, _message: unknown, upgrade: boolean, keepAlive: boolean) => {
    const head: Head = { major, minor, headers: headers ?? pending, method: METHODS[method], url: url || pendingUrl, status, upgrade, keepAlive }
    pending = []
    pendingUrl = ''
    state.heads.push(head)
    return answer(head)
  }
  parser[HTTPParser.kOnBody] = (chunk: Buffer) => {
    state.bodies.push(Buffer.from(chunk))
  }
  parser[HTTPParser.kOnMessageComplete] = () => {
    state.completed++
  }
  return state
}

const bytes = (text: string) => Buffer.from(text, 'latin1')

describe("Node's native HTTP parser, as the data plane uses it", () => {
  it('exposes the parser class, its constants and the method table', () => {
    for (const key of ['REQUEST', 'RESPONSE', 'kOnHeaders', 'kOnHeadersComplete', 'kOnBody', 'kOnMessageComplete'] as const) expect(typeof HTTPParser[key], key).toBe('number')
    expect(METHODS).toContain('GET')
    expect(METHODS).toContain('CONNECT')
  })

  it('reports a request head, its body as Buffers and the end, and returns the bytes consumed', () => {
    const r = recorder(HTTPParser.REQUEST)
    const wire = bytes('POST /ship?x=1 HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n\r\nhello')
    expect(r.parser.execute(wire)).toBe(wire.length)
    expect(r.heads).toEqual([{ major: 1, minor: 1, headers: ['Host', 'a.test', 'Content-Length', '5'], method: 'POST', url: '/ship?x=1', status: undefined, upgrade: false, keepAlive: true }])
    expect(Buffer.concat(r.bodies).toString()).toBe('hello')
    expect(r.completed).toBe(1)
  })

  it('parses pipelined requests in one buffer, and says when a connection is not kept alive', () => {
    const r = recorder(HTTPParser.REQUEST)
    const wire = bytes('GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.0\r\nHost: a\r\n\r\n')
    expect(r.parser.execute(wire)).toBe(wire.length)
    expect(r.heads.map((h) => [h.url, h.keepAlive])).toEqual([
      ['/a', true],
      ['/b', false],
    ])
    expect(r.completed).toBe(2)
  })

  it('hands over headers in kOnHeaders batches for long or split heads, none lost', () => {
    const many = Array.from({ length: 40 }, (_, i) => `X-H${i}: v${i}\r\n`).join('')
    const whole = recorder(HTTPParser.REQUEST)
    const wire = bytes(`GET /many HTTP/1.1\r\nHost: a\r\n${many}\r\n`)
    expect(whole.parser.execute(wire)).toBe(wire.length)
    expect(whole.headerBatches).toBeGreaterThan(0)
    expect(whole.heads[0]!.headers).toHaveLength(82)
    expect(whole.heads[0]!.headers.slice(-2)).toEqual(['X-H39', 'v39'])
    expect(whole.heads[0]!.url).toBe('/many')

    const split = recorder(HTTPParser.REQUEST)
    const cut = 40
    expect(split.parser.execute(wire.subarray(0, cut))).toBe(cut)
    expect(split.parser.execute(wire.subarray(cut))).toBe(wire.length - cut)
    expect(split.heads[0]!.headers).toEqual(whole.heads[0]!.headers)
    expect(split.heads[0]!.url).toBe('/many')
  })

  it('stops after a CONNECT head when told 2, leaving the tunnel bytes unparsed', () => {
    const r = recorder(HTTPParser.REQUEST, (head) => (head.upgrade ? 2 : 0))
    const head = 'CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n'
    expect(r.parser.execute(bytes(head + '\x16\x03\x01tls-bytes'))).toBe(head.length)
    expect(r.heads[0]).toMatchObject({ method: 'CONNECT', url: 'api.test:443', upgrade: true })
  })

  it('reports a response status and keep-alive, skips the body when told 1, stops after the head when told 2', () => {
    const skip = recorder(HTTPParser.RESPONSE, () => 1)
    const headAnswer = bytes('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n')
    expect(skip.parser.execute(headAnswer)).toBe(headAnswer.length)
    expect(skip.heads[0]).toMatchObject({ status: 200, keepAlive: true, headers: ['Content-Length', '5'] })
    expect(skip.completed).toBe(1)

    const stop = recorder(HTTPParser.RESPONSE, () => 2)
    const head = 'HTTP/1.1 201 Created\r\nContent-Length: 4\r\nConnection: close\r\n\r\n'
    expect(stop.parser.execute(bytes(head + 'body'))).toBe(head.length)
    expect(stop.heads[0]).toMatchObject({ status: 201, keepAlive: false })
    expect(stop.bodies).toEqual([])
    // The pool reads that body itself, then starts the parser afresh for the next response.
    stop.parser.initialize(HTTPParser.RESPONSE, {}, 16 * 1024, 0)
    const next = bytes('HTTP/1.1 204 No Content\r\n\r\n')
    expect(stop.parser.execute(next)).toBe(next.length)
    expect(stop.heads.map((h) => h.status)).toEqual([201, 204])
  })

  it('reports a 1xx answer, then the final response, on one parser', () => {
    const r = recorder(HTTPParser.RESPONSE, (head) => (head.status < 200 ? 1 : 0))
    const wire = bytes('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok')
    expect(r.parser.execute(wire)).toBe(wire.length)
    expect(r.heads.map((h) => h.status)).toEqual([100, 200])
    expect(Buffer.concat(r.bodies).toString()).toBe('ok')
  })

  it('ends a close-delimited body on finish(), and finish() on a cut body returns an Error', () => {
    const closeDelimited = recorder(HTTPParser.RESPONSE)
    closeDelimited.parser.execute(bytes('HTTP/1.1 200 OK\r\n\r\nuntil close'))
    expect(closeDelimited.completed).toBe(0)
    expect(closeDelimited.parser.finish()).not.toBeInstanceOf(Error)
    expect(closeDelimited.completed).toBe(1)
    expect(Buffer.concat(closeDelimited.bodies).toString()).toBe('until close')

    const cut = recorder(HTTPParser.RESPONSE)
    cut.parser.execute(bytes('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'))
    expect(cut.parser.finish()).toBeInstanceOf(Error)
    expect(cut.completed).toBe(0)
  })

  it('returns parse errors as Errors with an HPE_ code, HPE_HEADER_OVERFLOW past maxHeaderSize', () => {
    const bad = recorder(HTTPParser.REQUEST)
    const result = bad.parser.execute(bytes('GET / HTTP/1.1\r\nHost a\r\n\r\n'))
    expect(result).toBeInstanceOf(Error)
    expect((result as Error & { code?: string }).code).toMatch(/^HPE_/)

    const big = recorder(HTTPParser.REQUEST, () => 0, 1024)
    const overflow = big.parser.execute(bytes(`GET / HTTP/1.1\r\nHost: a\r\nX-Big: ${'x'.repeat(2048)}\r\n\r\n`))
    expect((overflow as Error & { code?: string }).code).toBe('HPE_HEADER_OVERFLOW')
  })
})
