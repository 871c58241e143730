import { describe, expect, it } from 'vitest'
import { drawValue } from '../engine/decision.js'
import { driftAgainstSchema } from './json-drift.js'

const schema = {
  type: 'object',
  properties: {
    carrier: { type: ['string', 'null'] },
    eta: { type: 'integer' },
    mode: { type: 'string', enum: ['air', 'sea'] },
    legs: { type: 'array', items: { type: 'object', properties: { from: { type: 'string' } } } },
    status: { anyOf: [{ type: 'string' }, { type: 'null' }] },
  },
}

function typeOk(field: string, value: unknown): boolean {
  switch (field) {
    case 'carrier':
    case 'status':
      return value === null || typeof value === 'string'
    case 'eta':
      return Number.isInteger(value)
    case 'mode':
      return value === 'air' || value === 'sea'
    case 'legs.from':
      return typeof value === 'string'
    default:
      return true
  }
}

describe('schema drift against a declared outputSchema', () => {
  it('changes declared fields into values their schema forbids, for every draw (nullable fields never become null or a string)', () => {
    for (let key = 0; key < 200; key++) {
      const content = { carrier: null, eta: 2, mode: 'air', legs: [{ from: 'LHR' }], status: 'ok', note: 'undeclared' }
      const before = JSON.parse(JSON.stringify(content)) as typeof content
      const changed = driftAgainstSchema(content, schema, (path) => drawValue(7, 'drift', 'tools/call t', `#${key}|${path}`))
      expect(changed).toBeGreaterThan(0)
      expect(content.note).toBe('undeclared')
      let drifted = 0
      for (const field of ['carrier', 'eta', 'mode', 'status'] as const) {
        if (JSON.stringify(content[field]) === JSON.stringify(before[field])) continue
        drifted++
        expect(typeOk(field, content[field]), `${field} drifted to ${JSON.stringify(content[field])} (key #${key})`).toBe(false)
      }
      const from = Array.isArray(content.legs) ? (content.legs[0] as { from?: unknown } | undefined)?.from : undefined
      if (Array.isArray(content.legs) && from !== 'LHR') {
        drifted++
        expect(typeOk('legs.from', from)).toBe(false)
      }
      if (!Array.isArray(content.legs)) drifted++
      expect(drifted).toBe(changed)
    }
  })

  it('drifts exactly the fields named, and none when the schema declares none of those present', () => {
    const content = { carrier: 'ups', eta: 2 }
    expect(driftAgainstSchema(content, schema, (path) => drawValue(1, 'r', 'x', path), ['eta'])).toBe(1)
    expect(content.carrier).toBe('ups')
    expect(Number.isInteger(content.eta)).toBe(false)
    expect(driftAgainstSchema({ other: 1 }, schema, (path) => drawValue(1, 'r', 'x', path))).toBe(0)
  })
})
