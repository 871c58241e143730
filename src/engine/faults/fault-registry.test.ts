import { describe, expect, it } from 'vitest'
import { ConfigError } from '../../errors.js'
import { FaultRegistry } from './fault-registry.js'
import { KERNEL_FAULTS } from './kernel-faults.js'
import { defineFault } from './fault.js'

const kernel = new FaultRegistry(KERNEL_FAULTS)

const teapotFault = defineFault({
  type: 'teapot',
  phase: 'before-upstream',
  params: {},
  explain: () => "answer 418 I'm a teapot",
  apply: async () => ({ action: { type: 'respond', status: 418, headers: {}, body: null }, injected: true }),
})

describe('FaultRegistry', () => {
  it('returns the fault of every kind it holds', () => {
    for (const kind of kernel.kinds) expect(kernel.faultFor(kind).type).toBe(kind)
  })

  it('refuses an unknown kind with ERR_CONFIG_INVALID, a did-you-mean and the kinds there are', () => {
    expect(() => kernel.faultFor('tiemout')).toThrow(ConfigError)
    expect(() => kernel.faultFor('tiemout')).toThrow(
      expect.objectContaining({ code: 'ERR_CONFIG_INVALID', message: expect.stringMatching(/^Failed to find a fault: unknown fault kind "tiemout"\. Did you mean "timeout"\? Use one of "[a-z_]+"(, "[a-z_]+")*\.$/) }),
    )
  })

  it('builds its rules schema from the faults it was given, so a plug-in kind is accepted only where it is registered', () => {
    const rule = { name: 'brew', route: '*', kind: 'teapot' }
    expect(kernel.ruleSchema.safeParse(rule).success).toBe(false)
    const extended = new FaultRegistry([...KERNEL_FAULTS, teapotFault])
    expect(extended.ruleSchema.parse(rule).kind).toBe('teapot')
    expect(extended.configSchema.parse({ rules: [rule] }).rules).toHaveLength(1)
    expect(extended.kinds.at(-1)).toBe('teapot')
  })

  it('refuses two faults of one kind', () => {
    expect(() => new FaultRegistry([...KERNEL_FAULTS, { ...teapotFault, type: 'timeout' }])).toThrow('Failed to register a fault: two faults are named "timeout"')
  })
})

describe('response_lost', () => {
  it('takes an error status (the client gets it instead of a reset) and refuses anything else, naming the field', () => {
    const parsed = kernel.configSchema.parse({ rules: [{ name: 'lost', route: '*', kind: 'response_lost', status: 504 }] }) as { rules: Array<{ status?: number }> }
    expect(parsed.rules[0]?.status).toBe(504)
    const refused = kernel.configSchema.safeParse({ rules: [{ name: 'lost', route: '*', kind: 'response_lost', status: 200 }] })
    expect(refused.success).toBe(false)
    expect(JSON.stringify(refused.error?.issues)).toContain('expected an error status 400–599')
    expect(kernel.faultFor('response_lost').explain({ status: 500 } as never)).toBe('let the upstream commit, then answer 500 instead of relaying its 2xx answer')
  })
})
