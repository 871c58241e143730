import { describe, expect, it } from 'vitest'
import { bodyDigest } from './match-key.js'
import { normaliseJson } from './normalisers.js'
import { parseJsonPath } from './json-path.js'
import type { Normaliser } from './cassette-schema.js'
import type { JsonValue } from '../../json/canonical-json.js'

const ALL: Normaliser[] = ['ids', 'timestamps', 'uuids']
const json = (value: unknown) => ({ encoding: 'utf8' as const, data: JSON.stringify(value), size: 0, truncated: false })
const digest = (value: unknown, normalize: Normaliser[] = ALL) => bodyDigest(json(value), 'application/json', [], normalize)

/** Turn 2 of a chat: the model's tool call and the tool's result, with this run's ids and times. */
const turn = (callId: string, resultCallId: string, shipment: string, at: string, prompt = 'Ship 2 boxes'): JsonValue => ({
  model: 'gpt-test',
  messages: [
    { role: 'user', content: prompt },
    { role: 'assistant', content: null, tool_calls: [{ id: callId, type: 'function', function: { name: 'ship', arguments: '{"boxes":2}' } }] },
    { role: 'tool', tool_call_id: resultCallId, content: JSON.stringify({ shipment, at, created_at: 1764657900 }) },
  ],
})

describe('normalisers', () => {
  it('match a conversation whose tool-call ids, UUIDs and timestamps are new, and only with them on', () => {
    const recorded = turn('call_Ab12Cd34Ef', 'call_Ab12Cd34Ef', '0b9e6c1e-7c4f-4b43-9d55-2f0e4f1b2a10', '2026-12-01T10:00:00Z')
    const replayed = turn('call_Zz98Yy76Xx', 'call_Zz98Yy76Xx', 'f3c2a1b0-1111-4222-8333-944455556666', '2026-12-02T06:45:12.345+01:00')
    expect(digest(replayed)).toBe(digest(recorded))
    expect(digest(replayed, [])).not.toBe(digest(recorded, []))
    // Only the named ones: without `uuids` the shipment's UUID still differs.
    expect(digest(replayed, ['ids', 'timestamps'])).not.toBe(digest(recorded, ['ids', 'timestamps']))
  })

  it('number ids by first appearance, so a result answering another call than the one made still differs', () => {
    const consistent = turn('call_Ab12Cd34Ef', 'call_Ab12Cd34Ef', 'x', 'y')
    const crossed = turn('call_Ab12Cd34Ef', 'call_Other00001', 'x', 'y')
    expect(digest(crossed)).not.toBe(digest(consistent))
    expect(normaliseJson(consistent, ALL)).toMatchObject({ messages: [{}, { tool_calls: [{ id: '<id:1>' }] }, { tool_call_id: '<id:1>' }] })
  })

  it('leave a changed prompt and values outside the conversation alone', () => {
    const recorded = turn('call_Ab12Cd34Ef', 'call_Ab12Cd34Ef', 'x', 'y')
    expect(digest(turn('call_Ab12Cd34Ef', 'call_Ab12Cd34Ef', 'x', 'y', 'Ship 3 boxes'))).not.toBe(digest(recorded))
    expect(normaliseJson({ user: 'call_Ab12Cd34Ef', messages: [] }, ALL)).toEqual({ user: 'call_Ab12Cd34Ef', messages: [] })
  })

  it('apply to Responses input, Anthropic tool_use ids and MCP tools/call arguments', () => {
    expect(normaliseJson({ previous_response_id: 'resp_0123456789', input: [{ type: 'function_call_output', call_id: 'fc_abcdef123456', output: 'at 2026-12-02 06:45' }] }, ALL)).toEqual({
      previous_response_id: '<id:2>',
      input: [{ type: 'function_call_output', call_id: '<id:1>', output: 'at <timestamp>' }],
    })
    expect(normaliseJson({ messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01AbCdEfGh', content: 'ok' }] }] }, ['ids'])).toEqual({
      messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: '<id:1>', content: 'ok' }] }],
    })
    const call = (request: string, ts: number) => ({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'ship', arguments: { request, ts, boxes: 2 } } })
    expect(digest(call('5f0c8f5e-0000-4000-8000-000000000001', 1764657900))).toBe(digest(call('5f0c8f5e-0000-4000-8000-000000000002', 1764660000123)))
    expect(digest({ ...call('x', 1), method: 'tools/list' })).not.toBe(digest({ ...call('y', 1), method: 'tools/list' }))
  })
})

describe("the user's normalisers", () => {
  const user = (normalizePatterns: string[], normalizePaths: string[] = []) => ({ normalizePatterns, normalizePaths })

  it('replace a pattern anywhere in the body, numbered by first appearance, inside JSON text too', () => {
    const body = (a: string, b: string) => ({ shipment: a, note: `see ${b}`, messages: [{ role: 'tool', content: JSON.stringify({ id: a, again: a }) }] })
    expect(normaliseJson(body('SHP-0001', 'SHP-0002'), [], user(['SHP-\\d+']))).toEqual({
      shipment: '<match:1>',
      note: 'see <match:2>',
      messages: [{ role: 'tool', content: '{"id":"<match:1>","again":"<match:1>"}' }],
    })
    const digestOf = (value: unknown, patterns: string[]) => bodyDigest(json(value), 'application/json', [], [], user(patterns))
    expect(digestOf(body('SHP-4821', 'SHP-77'), ['SHP-\\d+'])).toBe(digestOf(body('SHP-0001', 'SHP-2'), ['SHP-\\d+']))
    // References that disagree still differ.
    expect(digestOf(body('SHP-1', 'SHP-1'), ['SHP-\\d+'])).not.toBe(digestOf(body('SHP-1', 'SHP-2'), ['SHP-\\d+']))
    expect(digestOf(body('SHP-4821', 'SHP-77'), [])).not.toBe(digestOf(body('SHP-0001', 'SHP-2'), []))
  })

  it('apply patterns to a text body that is not JSON', () => {
    const text = (data: string) => ({ encoding: 'utf8' as const, data, size: data.length, truncated: false })
    const digestOf = (data: string) => bodyDigest(text(data), 'text/plain', [], [], user(['ord_[0-9a-f]+']))
    expect(digestOf('order=ord_9f8e7d shipped')).toBe(digestOf('order=ord_0011aa shipped'))
    expect(digestOf('order=ord_9f8e7d shipped')).not.toBe(digestOf('order=ord_0011aa held'))
  })

  it('replace the values a JSON path reaches, at any depth with `..`, and nothing else', () => {
    const body: { model: string; messages: Array<Record<string, JsonValue>>; 'odd key': number } = { model: 'm', messages: [{ role: 'user', content: 'hi' }, { role: 'tool', content: 'SHP-1', meta: { content: 'x' } }], 'odd key': 1 }
    expect(normaliseJson(body, [], user([], ['$.messages[*].content']))).toEqual({ ...body, messages: [{ role: 'user', content: '<path>' }, { role: 'tool', content: '<path>', meta: { content: 'x' } }] })
    expect(normaliseJson(body, [], user([], ['$.messages[1].content', "$['odd key']"]))).toEqual({ ...body, messages: [body.messages[0], { ...body.messages[1], content: '<path>' }], 'odd key': '<path>' })
    expect(normaliseJson(body, [], user([], ['$..content']))).toEqual({ ...body, messages: [{ role: 'user', content: '<path>' }, { role: 'tool', content: '<path>', meta: { content: '<path>' } }] })
    expect(normaliseJson(body, [], user([], ['$.nothing.here', '$.messages[9]']))).toBe(body)
  })
})

describe('parseJsonPath', () => {
  it.each([
    ['$.messages[*].content', [{ key: 'messages' }, { any: true }, { key: 'content' }]],
    ["$['a b'][0].*", [{ key: 'a b' }, { index: 0 }, { any: true }]],
    ['$..id', [{ deep: 'id' }]],
    ['$..*', [{ deep: null }]],
  ])('reads %s', (path, segments) => {
    expect(parseJsonPath(path)).toEqual(segments)
  })

  it.each([
    ['messages', 'a path starts with $'],
    ['$', '"$" alone names the whole body'],
    ['$.a[?(@.b)]', 'unexpected "[?(@.b)]"'],
    ['$..', '".." takes a name or * at ".."'],
    ['$.a[-1]', 'unexpected "[-1]"'],
  ])('refuses %s: %s', (path, why) => {
    expect(parseJsonPath(path)).toBe(why)
  })
})
