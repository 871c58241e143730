import { describe, expect, it } from 'vitest'
import type { CallRecord } from '../../src/engine/schema/report.js'
import { faultText, latency, modelText, statusText } from '../../web/dashboard/format.js'
import { editorDocument } from '../../web/dashboard/editor-document.js'

const call: CallRecord = {
  id: 3,
  route: 'POST /v1/chat/completions',
  ordinal: 1,
  key: '#1',
  parent: null,
  method: 'POST',
  url: 'http://llm.test/v1/chat/completions',
  started: 0.5,
  elapsed: 0.0424,
  outcome: 'response',
  status: 200,
  executed: true,
  upstreamStatus: 200,
  fault: 'slow',
  kind: 'latency',
  phase: 'before-upstream',
  injected: true,
  retryAfter: null,
  error: null,
}

describe('the dashboard’s texts for a call', () => {
  it('shows model and tokens only for model calls', () => {
    expect(modelText(call)).toBe('')
    expect(modelText({ ...call, model: { provider: 'openai', api: 'chat.completions', model: 'gpt-4o-mini', inputTokens: 12, outputTokens: 3, streamed: true } })).toBe('gpt-4o-mini · 12→3 tok')
    expect(modelText({ ...call, model: { provider: 'anthropic', api: 'messages', model: null, inputTokens: null, outputTokens: null, streamed: false } })).toBe('anthropic')
  })

  it('shows status, latency and fault', () => {
    expect([statusText(call), latency(call), faultText(call)]).toEqual(['200', '42 ms', 'slow · latency'])
    expect([statusText({ ...call, outcome: 'reset', status: null }), latency({ ...call, elapsed: null }), faultText({ ...call, injected: false })]).toEqual(['reset', '…', 'slow · latency (selected)'])
  })

  it('puts the rules in the editor without the fields left at their defaults', () => {
    const document = editorDocument({
      seed: 7,
      maxCalls: null,
      routes: {},
      rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [2], probability: 1, limit: null, delay: 1, replacement: null }],
    })
    expect(document).toEqual({ seed: 7, maxCalls: null, routes: {}, rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [2], delay: 1 }] })
  })
})
