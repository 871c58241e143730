import { describe, expect, it } from 'vitest'
import { spliceMeta } from './splice-meta.js'

const KEY = 'x-toolstorm-call'
const ID = 'ab12-3-XyZ_9'

/** The message a serialiser would write: `params._meta[KEY] = ID` added. */
function expected(message: Record<string, unknown>): unknown {
  const copy = structuredClone(message)
  const params = (copy.params ??= {}) as Record<string, unknown>
  params._meta = { ...((params._meta as object | undefined) ?? {}), [KEY]: ID }
  return copy
}

function splice(text: string): Buffer | null {
  return spliceMeta(Buffer.from(text), JSON.parse(text) as Record<string, unknown>, KEY, ID)
}

describe('spliceMeta', () => {
  it.each([
    ['no params', '{"jsonrpc":"2.0","id":1,"method":"ping"}'],
    ['no params, spaced', '{ "jsonrpc" : "2.0" , "id" : 1 , "method" : "ping" }'],
    ['params first, with arguments', '{"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/a","content":"x}{\\"]["}},"jsonrpc":"2.0","id":4}'],
    ['empty params', '{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{}}'],
    ['_meta with a progress token, last', '{"method":"tools/call","params":{"name":"t","arguments":{},"_meta":{"progressToken":3}},"jsonrpc":"2.0","id":3}'],
    ['empty _meta', '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{},"name":"t"}}'],
    ['strings holding "params" and "_meta" and escapes', '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"\\"params\\":{","arguments":{"_meta":"not this one","q":"\\\\"}}}'],
    ['numbers, literals and arrays before params', '{"jsonrpc":"2.0","id":-1.5e3,"x":[1,{"params":null},true,null],"method":"m","params":{"a":[{"_meta":1}]}}'],
    ['duplicate params keys: the last one counts', '{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1},"params":{"b":2}}'],
  ])('adds the call id where a serialiser would (%s)', (_name, text) => {
    const spliced = splice(text)
    expect(spliced).not.toBeNull()
    expect(JSON.parse(spliced!.toString())).toEqual(expected(JSON.parse(text) as Record<string, unknown>))
  })

  it.each([
    ['params by position', '{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2]}'],
    ['null params', '{"jsonrpc":"2.0","id":1,"method":"m","params":null}'],
    ['a _meta that is not an object', '{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":"x"}}'],
    ['a _meta that holds the key already', `{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"${KEY}":"theirs"}}}`],
    ['a key written with an escape', '{"jsonrpc":"2.0","id":1,"method":"m","par\\u0061ms":{"a":1}}'],
  ])('leaves to the serialiser what it cannot splice safely (%s)', (_name, text) => {
    expect(splice(text)).toBeNull()
  })

  it('keeps every other byte as it came', () => {
    const text = '{"method":"tools/call","params":{"name":"t","arguments":{"content":"é ✓ \\u0000"}},"jsonrpc":"2.0","id":7}'
    const spliced = splice(text)!.toString()
    expect(spliced).toBe(`{"method":"tools/call","params":{"_meta":{"${KEY}":"${ID}"},"name":"t","arguments":{"content":"é ✓ \\u0000"}},"jsonrpc":"2.0","id":7}`)
  })
})
