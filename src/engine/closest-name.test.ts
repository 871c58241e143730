import { describe, expect, it } from 'vitest'
import { closestName, editDistance } from './closest-name.js'

describe('closestName', () => {
  it('counts a swapped pair of letters as one edit', () => {
    expect(editDistance('tagret', 'target')).toBe(1)
    expect(editDistance('create_shipmnt', 'create_shipment')).toBe(1)
    expect(editDistance('', 'abc')).toBe(3)
  })

  it('suggests the nearest candidate within a third of the length, ignoring case', () => {
    expect(closestName('tagret', ['target', 'port', 'host'])).toBe('target')
    expect(closestName('post /shipments', ['POST /shipments'])).toBe('POST /shipments')
    expect(closestName('frob', ['target', 'port', 'seed'])).toBeUndefined()
    expect(closestName('x', ['y'])).toBe('y')
    expect(closestName('target', ['target'])).toBeUndefined()
  })
})
