import { describe, expect, it } from 'vitest'
import { deltaCutRule } from './delta-cut-rule.js'
import type { DeltaReader } from './deltas.js'
import type { SsePiece } from './sse-splitter.js'

const piece = (data: string): SsePiece => ({ bytes: new TextEncoder().encode(`data: ${data}\n\n`), complete: true, dispatches: true, event: null, terminal: false })
/** A reader as a plug-in gives one: here, the event's data names its delta. */
const read: DeltaReader = (event) => (new TextDecoder().decode(event).includes('"text"') ? 'text' : null)

describe('deltaCutRule', () => {
  it("counts the deltas the plug-in's reader names and stops after `after` of them", () => {
    const rule = deltaCutRule(read, 'text', 1, 'abort')
    expect([rule.decide(piece('"text"'), 0), rule.decide(piece('"other"'), 1), rule.decide(piece('"text"'), 2)]).toEqual(['send', 'send', 'stop'])
    expect(rule.cutAt?.()).toEqual({ at: 'text', deltas: 1 })
  })

  it('relays the stream whole and says why when no plug-in reads deltas', () => {
    const rule = deltaCutRule(undefined, 'tool_arguments', 0, 'abort')
    expect(rule.decide(piece('"text"'), 0)).toBe('send')
    expect(rule.notFired?.()).toBe("at: tool_arguments: no plug-in reads this stream's deltas (the model-calls plug-in does)")
  })
})
