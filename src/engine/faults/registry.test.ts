import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../errors.js'
import { FAULT_KINDS, faultFor } from './registry.js'

describe('faultFor', () => {
  it('returns the fault of every declared kind', () => {
    for (const kind of FAULT_KINDS) expect(faultFor(kind).type).toBe(kind)
  })

  it('refuses an unknown kind with ERR_CONFIG_INVALID, naming the kinds there are', () => {
    expect(() => faultFor('tiemout')).toThrow(ConfigError)
    expect(() => faultFor('tiemout')).toThrow(
      expect.objectContaining({ code: 'ERR_CONFIG_INVALID', message: expect.stringMatching(/^Failed to find a fault: unknown fault kind "tiemout"\. Use one of "[a-z_]+"(, "[a-z_]+")*\.$/) }),
    )
    expect(() => faultFor('tiemout')).toThrow('"timeout"')
  })
})
