import { describe, expect, it } from 'vitest'
import { JsonPathScanner, type JsonScalar } from './json-path-scanner.js'

function scan(text: string, wanted: string[], chunkSize?: number): Array<[string, JsonScalar]> {
  const found: Array<[string, JsonScalar]> = []
  const scanner = new JsonPathScanner(wanted, (path, value) => found.push([path, value]))
  const bytes = Buffer.from(text, 'utf8')
  const size = chunkSize ?? bytes.length
  for (let at = 0; at < bytes.length; at += size) scanner.push(bytes.subarray(at, at + size))
  scanner.end()
  return found
}

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-1',
  model: 'gpt-x-2025',
  choices: [{ index: 0, message: { role: 'assistant', content: 'say "model": 1 \\ {usage} ünïcode' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18, details: { model: 'nested' } },
  stream: false,
})

describe('JsonPathScanner', () => {
  it('picks the wanted scalars at every chunk size, skipping strings that look like JSON', () => {
    for (let size = 1; size <= COMPLETION.length; size++) {
      expect(scan(COMPLETION, ['model', 'usage.prompt_tokens', 'usage.completion_tokens', 'stream'], size)).toEqual([
        ['model', 'gpt-x-2025'],
        ['usage.prompt_tokens', 11],
        ['usage.completion_tokens', 7],
        ['stream', false],
      ])
    }
  })

  it('names array elements with [] and reads escaped strings', () => {
    expect(scan('{"a":[{"b":"x\\"y\\u00e9"},{"b":null}], "c" : -1.5e2 }', ['a.[].b', 'c'], 3)).toEqual([
      ['a.[].b', 'x"yé'],
      ['a.[].b', null],
      ['c', -150],
    ])
  })

  it('reads nothing from malformed or non-JSON text, without throwing', () => {
    expect(scan('not json at all', ['model'])).toEqual([])
    expect(scan('{"model": "a', ['model'])).toEqual([])
    expect(scan('[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[{"model":"deep"}', ['model'])).toEqual([])
  })

  it('keeps only the first 256 bytes of a captured string', () => {
    const [[, value]] = scan(JSON.stringify({ model: 'm'.repeat(1000) }), ['model']) as [[string, string]]
    expect(value).toHaveLength(256)
  })
})
