import { describe, expect, it } from 'vitest'
import { clientAnswerIdOf, serverRequestIdOf, withheldAnswerEvent } from './client-answer-gates.js'

const event = (message: unknown) => Buffer.from(`event: message\nid: 7\ndata: ${JSON.stringify(message)}\n\n`)
const body = (message: unknown) => Buffer.from(JSON.stringify(message))

describe('the messages a replayed MCP stream waits on', () => {
  it('reads a server request\'s id from an event, and a client answer\'s id from a POST body; nothing else has one', () => {
    expect(serverRequestIdOf(event({ jsonrpc: '2.0', id: 0, method: 'sampling/createMessage', params: {} }))).toBe(0)
    expect(serverRequestIdOf(event({ jsonrpc: '2.0', method: 'notifications/progress', params: {} }))).toBeNull()
    expect(serverRequestIdOf(event({ jsonrpc: '2.0', id: 4, result: {} }))).toBeNull()
    expect(serverRequestIdOf(Buffer.from(': keep-alive\n\n'))).toBeNull()
    expect(clientAnswerIdOf(body({ jsonrpc: '2.0', id: 'x', result: { action: 'accept' } }))).toBe('x')
    expect(clientAnswerIdOf(body({ jsonrpc: '2.0', id: 2, error: { code: -1, message: 'no' } }))).toBe(2)
    expect(clientAnswerIdOf(body({ jsonrpc: '2.0', id: 2, method: 'tools/call' }))).toBeNull()
    expect(clientAnswerIdOf(Buffer.from('not json'))).toBeNull()
  })

  it('answers a live call with a JSON-RPC error event', () => {
    const text = Buffer.from(withheldAnswerEvent(9, 'why')).toString()
    expect(text.endsWith('\n\n')).toBe(true)
    expect(JSON.parse(text.split('data: ')[1] as string)).toEqual({ jsonrpc: '2.0', id: 9, error: { code: -32603, message: 'why' } })
  })
})
