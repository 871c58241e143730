import { describe, expect, it } from 'vitest'
import { answerIdOf, isLegacySessionStream, LegacyAnswerGates } from './legacy-answers.js'

const event = (message: object) => Buffer.from(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8')

describe('legacy MCP answers in replay', () => {
  it('tells a legacy session stream by its first event, comments before it not counting', () => {
    expect(isLegacySessionStream(Buffer.from(': hello\n\nevent: endpoint\ndata: /messages?sessionId=x\n\n'))).toBe(true)
    expect(isLegacySessionStream(Buffer.from('event: message\ndata: {}\n\nevent: endpoint\ndata: /m\n\n'))).toBe(false)
    expect(isLegacySessionStream(Buffer.from('data: {"choices":[]}\n\n'))).toBe(false)
  })

  it('finds the id an answer event answers, and none in requests or notifications', () => {
    expect(answerIdOf(event({ jsonrpc: '2.0', id: 3, result: {} }))).toBe(3)
    expect(answerIdOf(event({ jsonrpc: '2.0', id: 'a', error: { code: -1, message: 'x' } }))).toBe('a')
    expect(answerIdOf(event({ jsonrpc: '2.0', id: 3, method: 'sampling/createMessage' }))).toBeNull()
    expect(answerIdOf(event({ jsonrpc: '2.0', method: 'notifications/progress' }))).toBeNull()
  })

  it('plays an answer once its POST is released, with the live id, in the stream that holds it; a release it holds none of goes to the next stream', async () => {
    const gates = new LegacyAnswerGates()
    const first = gates.open([{ id: 0, bytes: event({ jsonrpc: '2.0', id: 0, result: { n: 1 } }) }])
    const second = gates.open([{ id: 0, bytes: event({ jsonrpc: '2.0', id: 0, result: { n: 2 } }) }, { id: 1, bytes: event({ jsonrpc: '2.0', id: 1, result: { n: 3 } }) }])
    const abort = new AbortController()
    const a = first.play(abort.signal)
    const b = second.play(abort.signal)
    const nextA = a.next()
    gates.release(0, 10)
    gates.release(0, 11)
    gates.release(1, 12)
    expect(text((await nextA).value as Uint8Array)).toContain('"id":10,"result":{"n":1}')
    expect(text((await b.next()).value as Uint8Array)).toContain('"id":11,"result":{"n":2}')
    expect(text((await b.next()).value as Uint8Array)).toContain('"id":12,"result":{"n":3}')
    const pending = b.next()
    abort.abort(new Error('client gone'))
    await expect(pending).rejects.toThrow('client gone')
  })
})
