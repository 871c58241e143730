import { describe, expect, it } from 'vitest'
import { editJsonRpcAnswer, jsonRpcMessages } from './json-rpc-body.js'

const text = (bytes: Uint8Array | null) => (bytes === null ? null : new TextDecoder().decode(bytes))
const setFlag = (answer: Record<string, unknown>) => {
  ;(answer.result as Record<string, unknown>).flag = true
  return true
}

describe('JSON-RPC messages in an MCP answer body', () => {
  it('reads a JSON body and each event of an event stream, data lines joined as a client joins them', () => {
    expect(jsonRpcMessages(Buffer.from('{"jsonrpc":"2.0","id":1,"result":{}}'))).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }])
    const stream = 'event: message\nid: a\ndata: {"jsonrpc":"2.0",\ndata: "id":1,"result":{}}\n\n: ping\n\ndata:{"jsonrpc":"2.0","method":"notifications/progress"}\r\n\r\n'
    expect(jsonRpcMessages(Buffer.from(stream))).toEqual([
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', method: 'notifications/progress' },
    ])
  })

  it('edits only the answer to the given id, keeping the event\'s other fields and every other event', () => {
    const stream = 'data: {"jsonrpc":"2.0","method":"notifications/progress","id":2}\n\nevent: message\nid: e-7\ndata: {"jsonrpc":"2.0","id":2,\ndata: "result":{}}\n\n'
    expect(text(editJsonRpcAnswer(Buffer.from(stream), 2, setFlag))).toBe(
      'data: {"jsonrpc":"2.0","method":"notifications/progress","id":2}\n\nevent: message\nid: e-7\ndata: {"jsonrpc":"2.0","id":2,"result":{"flag":true}}\n\n',
    )
    expect(text(editJsonRpcAnswer(Buffer.from('{"jsonrpc":"2.0","id":2,"result":{}}'), 2, setFlag))).toBe('{"jsonrpc":"2.0","id":2,"result":{"flag":true}}')
  })

  it('returns null when no answer to the id is there or the edit changed nothing', () => {
    expect(editJsonRpcAnswer(Buffer.from('{"jsonrpc":"2.0","id":3,"result":{}}'), 2, setFlag)).toBeNull()
    expect(editJsonRpcAnswer(Buffer.from('data: {"jsonrpc":"2.0","id":2,"result":{}}\n\n'), 2, () => false)).toBeNull()
    expect(editJsonRpcAnswer(Buffer.from('not json'), 2, setFlag)).toBeNull()
  })
})
