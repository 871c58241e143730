import { describe, expect, it } from 'vitest'
import { readStdioLine, responseIdOf } from './json-rpc-line.js'

/** What a full parse says the line's response id is (undefined: not a response with an id). */
function parsedId(text: string): unknown {
  const message = readStdioLine(Buffer.from(text))
  return message.kind === 'response' && message.id !== null ? message.id : undefined
}

describe('responseIdOf', () => {
  it.each([
    ['{"result":{"content":[{"type":"text","text":"1"}]},"jsonrpc":"2.0","id":7}', 7],
    ['{"jsonrpc":"2.0","id":"a-1","error":{"code":-32601,"message":"no"}}', 'a-1'],
    [' { "jsonrpc" : "2.0" , "id" : -3 , "result" : { } } ', -3],
    ['{"jsonrpc":"2.0","id":1,"result":{"text":"a \\"quoted\\" \\\\ } ] id"},"id":2}', 2],
    ['{"jsonrpc":"2.0","id":1e2,"result":null}', 100],
    ['{"jsonrpc":"2.0","id":"é","result":{}}', 'é'],
  ])('finds the id of a response without parsing it: %s', (text, id) => {
    expect(responseIdOf(Buffer.from(text))).toBe(id)
    expect(parsedId(text)).toBe(id)
  })

  it.each([
    ['a request from the server (same id as a client request)', '{"jsonrpc":"2.0","id":1,"method":"roots/list"}'],
    ['a notification', '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}'],
    ['no jsonrpc version', '{"id":1,"result":{}}'],
    ['another version', '{"jsonrpc":"1.0","id":1,"result":{}}'],
    ['no result or error', '{"jsonrpc":"2.0","id":1}'],
    ['not JSON', 'this is not JSON-RPC'],
    ['an array (a batch)', '[{"jsonrpc":"2.0","id":1,"result":{}}]'],
    ['a cut line', '{"jsonrpc":"2.0","id":1,"result":{"a":'],
    ['text after the object', '{"jsonrpc":"2.0","id":1,"result":{}} x'],
    ['an id that is an object', '{"jsonrpc":"2.0","id":{"a":1},"result":{}}'],
  ])('leaves what is not plainly a response to the full parse: %s', (_name, text) => {
    expect(responseIdOf(Buffer.from(text))).toBeUndefined()
  })

  it.each([
    ['an escaped key', '{"jsonrpc":"2.0","\\u0069d":1,"result":{}}'],
    ['an escaped id', '{"jsonrpc":"2.0","id":"a\\u0041","result":{}}'],
    ['an escaped method key', '{"jsonrpc":"2.0","id":1,"result":{},"\\u006dethod":"x"}'],
  ])('falls back on escapes, where the bytes do not say what the parse sees: %s', (_name, text) => {
    expect(responseIdOf(Buffer.from(text))).toBeUndefined()
  })
})
