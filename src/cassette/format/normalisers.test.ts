import { describe, expect, it } from 'vitest'
import { bodyDigest } from './match-key.js'
import { normaliseJson } from './normalisers.js'
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
