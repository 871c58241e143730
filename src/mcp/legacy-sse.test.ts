import { describe, expect, it } from 'vitest'
import type { UpstreamResponse } from '../engine/exchange-transport.js'
import { MAX_HELD_BYTES } from '../engine/streams/sse-splitter.js'
import { LegacySseSessions, legacyMcpRequest, MAX_SESSIONS } from './legacy-sse.js'
import { parseMcpRequest } from './parse-mcp-request.js'

const GET_URL = new URL('http://tools.test/sse')

/** An upstream event stream whose chunks are pushed by the test; `end()` ends it. */
function upstream(): { response: UpstreamResponse; push(text: string): void; end(): void } {
  const queue: Array<Uint8Array | null> = []
  let wake: (() => void) | null = null
  const body: AsyncIterable<Uint8Array> = {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve))
        const chunk = queue.shift()!
        if (chunk === null) return
        yield chunk
      }
    },
  }
  const put = (chunk: Uint8Array | null) => {
    queue.push(chunk)
    wake?.()
    wake = null
  }
  return { response: { status: 200, headers: { 'content-type': 'text/event-stream' }, body }, push: (text) => put(Buffer.from(text)), end: () => put(null) }
}

async function read(body: AsyncIterable<Uint8Array>, count: number): Promise<string> {
  const iterator = body[Symbol.asyncIterator]()
  let text = ''
  for (let i = 0; i < count; i++) text += Buffer.from((await iterator.next()).value as Uint8Array).toString('utf8')
  return text
}

describe('LegacySseSessions', () => {
  it('learns the endpoint and session from a first endpoint event split across chunks, after a comment, and relays the stream unchanged', async () => {
    const sessions = new LegacySseSessions()
    const source = upstream()
    const relayed = sessions.watch(GET_URL, source.response)
    source.push(': hello\n\nevent: endp')
    source.push('oint\ndata: /messages?sessionId=s-1\n\n')
    expect(await read(relayed.body, 2)).toBe(': hello\n\nevent: endpoint\ndata: /messages?sessionId=s-1\n\n')
    expect(sessions.isEndpoint(new URL('http://tools.test/messages?sessionId=s-1'))).toBe(true)
    expect(sessions.isEndpoint(new URL('http://tools.test/messages/other'))).toBe(false)
    expect(sessions.isEndpoint(new URL('http://other.test/messages'))).toBe(false)
    expect(sessions.stream('http://tools.test', 's-1')).not.toBeNull()
  })

  it('forgets a session when its stream ends, and the oldest session past the bound', async () => {
    const sessions = new LegacySseSessions()
    const first = upstream()
    const relayed = sessions.watch(GET_URL, first.response)
    first.push('event: endpoint\ndata: /messages?sessionId=s-0\n\n')
    await read(relayed.body, 1)
    expect(sessions.stream('http://tools.test', 's-0')).not.toBeNull()
    first.end()
    expect((await relayed.body[Symbol.asyncIterator]().next()).done).toBe(true)
    expect(sessions.stream('http://tools.test', 's-0')).toBeNull()

    const streams = []
    for (let i = 1; i <= MAX_SESSIONS + 1; i++) {
      const source = upstream()
      const body = sessions.watch(GET_URL, source.response).body
      source.push(`event: endpoint\ndata: /messages?sessionId=s-${i}\n\n`)
      await read(body, 1)
      streams.push(source)
    }
    expect(sessions.stream('http://tools.test', 's-1')).toBeNull()
    expect(sessions.stream('http://tools.test', 's-2')).not.toBeNull()
    expect(sessions.stream('http://tools.test', `s-${MAX_SESSIONS + 1}`)).not.toBeNull()
  })

  it('writes an injected answer between upstream events and holds, alters and loses answers by id', async () => {
    const sessions = new LegacySseSessions()
    const source = upstream()
    const iterator = sessions.watch(GET_URL, source.response).body[Symbol.asyncIterator]()
    const next = async () => Buffer.from((await iterator.next()).value as Uint8Array).toString('utf8')
    source.push('event: endpoint\ndata: /messages?sessionId=s-1\n\n')
    await next()
    const stream = sessions.stream('http://tools.test', 's-1')!
    stream.inject(1, Buffer.from('{"jsonrpc":"2.0","id":1,"result":{}}'))
    expect(await next()).toBe('event: message\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\n\n')
    stream.hold(2)
    stream.alter(3, async (data) => data.replace('"v":1', '"v":2'))
    source.push('event: message\ndata: {"jsonrpc":"2.0","id":2,"result":{}}\n\n')
    source.push('event: message\ndata: {"jsonrpc":"2.0","id":3,"result":{"v":1}}\n\n')
    source.push('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n')
    // The held answer waits; the others pass it.
    expect(await next()).toBe('event: message\ndata: {"jsonrpc":"2.0","id":3,"result":{"v":2}}\n\n')
    expect(await next()).toBe('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n')
    stream.release(2)
    expect(await next()).toBe('event: message\ndata: {"jsonrpc":"2.0","id":2,"result":{}}\n\n')
    stream.lose(4)
    source.push('event: message\ndata: {"jsonrpc":"2.0","id":4,"result":{}}\n\n')
    await expect(iterator.next()).rejects.toMatchObject({ code: 'ECONNRESET' })
    expect(sessions.stream('http://tools.test', 's-1')).toBeNull()
  })

  it('writes an injected answer after an oversized upstream event passing in pieces, never inside it', async () => {
    const sessions = new LegacySseSessions()
    const source = upstream()
    const iterator = sessions.watch(GET_URL, source.response).body[Symbol.asyncIterator]()
    source.push('event: endpoint\ndata: /messages?sessionId=s-1\n\n')
    await iterator.next()
    const big = 'event: message\ndata: "' + 'x'.repeat(MAX_HELD_BYTES + 1024)
    source.push(big)
    let out = Buffer.from((await iterator.next()).value as Uint8Array).toString('utf8')
    sessions.stream('http://tools.test', 's-1')!.inject(9, Buffer.from('{"jsonrpc":"2.0","id":9,"result":{}}'))
    source.push('"\n\n')
    const injected = 'event: message\ndata: {"jsonrpc":"2.0","id":9,"result":{}}\n\n'
    while (!out.endsWith(injected)) out += Buffer.from((await iterator.next()).value as Uint8Array).toString('utf8')
    expect(out).toBe(big + '"\n\n' + injected)
  })
})

describe('legacyMcpRequest', () => {
  const call = parseMcpRequest(Buffer.from('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_quote"}}'))
  it('takes a POST with the session in its query and no event-stream Accept for a legacy message, its session the query\'s', () => {
    expect(legacyMcpRequest(call, new URL('http://t/messages?sessionId=abc'), { accept: '*/*' })).toMatchObject({ session: 'abc', legacySse: true })
    expect(legacyMcpRequest(call, new URL('http://t/messages/?session_id=py1'), {})).toMatchObject({ session: 'py1', legacySse: true })
  })
  it('leaves a Streamable HTTP message as it is', () => {
    expect(legacyMcpRequest(call, new URL('http://t/mcp?sessionId=abc'), { accept: 'application/json, text/event-stream' })).toBe(call)
    expect(legacyMcpRequest(call, new URL('http://t/mcp'), {})).toBe(call)
    expect(legacyMcpRequest(null, new URL('http://t/messages?sessionId=abc'), {})).toBeNull()
  })
})
