import { describe, expect, it } from 'vitest'
import { parseStrictJson } from './strict-json.js'
import { canonicalJson } from './canonical-json.js'

describe('strict JSON', () => {
  it.each([
    ['{"a":1,"a":2}', 'duplicate key "a"'],
    ['NaN', 'unexpected character "N"'],
    ['[Infinity]', 'unexpected character "I"'],
    ['[1e999]', 'number out of range'],
    ['\uFEFF{}', 'a byte order mark is not allowed'],
    ['{"a":', 'unexpected end of input'],
    ['[1,]', 'unexpected character "]"'],
    ['{} x', 'unexpected content after the JSON value'],
  ])('rejects %j', (text, message) => {
    expect(() => parseStrictJson(text)).toThrow(message)
  })

  it('rejects nesting beyond the limit', () => {
    expect(() => parseStrictJson('['.repeat(40) + ']'.repeat(40), { maxDepth: 32 })).toThrow('nesting exceeds 32 levels')
    expect(parseStrictJson('['.repeat(32) + ']'.repeat(32), { maxDepth: 32 })).toBeTruthy()
  })

  it('reports line, column and path', () => {
    try {
      parseStrictJson('{\n  "rules": [\n    {"kind": tru}\n  ]\n}')
      expect.unreachable()
    } catch (error) {
      expect(error).toMatchObject({ line: 3, path: '$.rules[0].kind' })
    }
  })

  it('keeps "__proto__" as a plain key', () => {
    const value = parseStrictJson('{"__proto__": {"polluted": true}}') as Record<string, unknown>
    expect(Object.keys(value)).toEqual(['__proto__'])
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it('parses what canonical JSON writes', () => {
    const value = { b: [1, 2.5, -3, 'é😀', null, true], a: { '\u007f': '"\\\n' } }
    expect(parseStrictJson(canonicalJson(value))).toEqual(value)
    expect(canonicalJson(value)).toBe('{"a":{"\\u007f":"\\"\\\\\\n"},"b":[1,2.5,-3,"\\u00e9\\ud83d\\ude00",null,true]}')
  })
})
