import { describe, expect, it } from 'vitest'
import { createMcpAnswerReader, type McpAnswer } from './mcp-answer-reader.js'

function read(id: number | string, contentType: string, chunks: string[]): McpAnswer[] {
  const answers: McpAnswer[] = []
  const reader = createMcpAnswerReader(id, contentType, (answer) => answers.push(answer))
  for (const chunk of chunks) reader(Buffer.from(chunk))
  reader(null)
  return answers
}

const big = 'x'.repeat(100 * 1024)

describe('createMcpAnswerReader', () => {
  it('reads a result, an isError result and an error code from a JSON answer, small or large', () => {
    expect(read(2, 'application/json', ['{"result":{"content":[]},"jsonrpc":"2.0","id":2}'])).toEqual([{ outcome: 'result', errorCode: null }])
    expect(read(2, 'application/json; charset=utf-8', ['{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"', big, '"}],"isError":true}}'])).toEqual([{ outcome: 'isError', errorCode: null }])
    expect(read('a', 'application/json', ['{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"Unknown tool"}}'])).toEqual([{ outcome: 'error', errorCode: -32602 }])
  })

  it('finds the answer with the request id among the events of a stream, past server requests and notifications', () => {
    const events = [
      'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n\n',
      'data: {"jsonrpc":"2.0","id":2,"method":"sampling/createMessage","params":{}}\n\n',
      'data: {"jsonrpc":"2.0","id":7,"result":{}}\n\n',
      'data: {"jsonrpc":"2.0",\ndata: "id":2,"error":{"code":-32001,"message":"timeout"}}\n\n',
    ]
    expect(read(2, 'text/event-stream', [events.join('').slice(0, 50), events.join('').slice(50)])).toEqual([{ outcome: 'error', errorCode: -32001 }])
  })

  it('hears nothing from an answer without the id, or that is not JSON', () => {
    expect(read(3, 'application/json', ['{"jsonrpc":"2.0","id":2,"result":{}}'])).toEqual([])
    expect(read(3, 'text/plain', ['{"jsonrpc":"2.0","id":3,"result":{}}'])).toEqual([])
    expect(read(3, 'application/json', ['{"jsonrpc":'])).toEqual([])
  })
})
