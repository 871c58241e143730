import { describe, expect, it } from 'vitest'
import { decide, drawValue } from './decision.js'
import { canonicalJson } from '../json/canonical-json.js'

describe('decision', () => {
  it('reproduces the golden draw for lost-receipt on create_shipment', () => {
    expect(canonicalJson([42, 'lost-receipt', 'create_shipment', '#1'])).toBe('[42,"lost-receipt","create_shipment","#1"]')
    expect(drawValue(42, 'lost-receipt', 'create_shipment', '#1').toString(16).padStart(16, '0')).toBe('08947c4bb4edf7c1')
  })

  it('reproduces the golden draw for inventory-down, which misses at p=0.5', () => {
    const n = drawValue(42, 'inventory-down', 'check_inventory', '#1')
    expect(n.toString(16)).toBe('9f674a739fd9dc5e')
    expect(decide(42, 'inventory-down', 'check_inventory', '#1', 0.5)).toBe(false)
    expect(decide(42, 'inventory-down', 'check_inventory', '#1', 0.63)).toBe(true)
  })

  it('reproduces the non-ASCII golden draw bit for bit', () => {
    const text = canonicalJson([7, 'r\u00e9gle', 't\u00fcl', 'cl\u00e9-\u{1F600}'])
    expect(text).toBe('[7,"r\\u00e9gle","t\\u00fcl","cl\\u00e9-\\ud83d\\ude00"]')
    expect(drawValue(7, 'r\u00e9gle', 't\u00fcl', 'cl\u00e9-\u{1F600}').toString(16)).toBe('fff6ccd317de9322')
  })

  it('always fires at probability 1 and never at 0', () => {
    for (let i = 1; i <= 50; i++) {
      expect(decide(3, 'r', 'route', `#${i}`, 1)).toBe(true)
      expect(decide(3, 'r', 'route', `#${i}`, 0)).toBe(false)
    }
  })

  it('compares exactly at the boundary N = p·2^64', () => {
    const n = drawValue(42, 'lost-receipt', 'create_shipment', '#1')
    const exact = Number(n) / 2 ** 64
    // The fraction rounded to a double sits next to N; the comparison stays exact on BigInt.
    expect(decide(42, 'lost-receipt', 'create_shipment', '#1', exact + 1e-15)).toBe(true)
    expect(decide(42, 'lost-receipt', 'create_shipment', '#1', exact - 1e-15)).toBe(false)
  })
})
