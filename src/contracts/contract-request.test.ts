import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ConfigError } from '../errors.js'
import { CONTRACT_UNITS } from './registry.js'
import { CONTRACT_CHECK_TYPES, parseContractRequest } from './contract-request.js'

describe('a contract as data (POST /contract)', () => {
  it('accepts a request type for every contract unit in the registry, and only `check` besides', () => {
    expect([...CONTRACT_CHECK_TYPES].sort()).toEqual([...Object.keys(CONTRACT_UNITS), 'check'].sort())
  })

  it('offers every type in the Python package\'s contract builder too', () => {
    const python = readFileSync(new URL('../../python/src/toolstorm/contract.py', import.meta.url), 'utf8')
    const offered = new Set([...python.matchAll(/"type": "(\w+)"/g)].map((match) => match[1]))
    expect([...offered].sort()).toEqual([...CONTRACT_CHECK_TYPES].sort())
  })

  it('refuses an unknown type with an error naming the field and every type it accepts', () => {
    let error: unknown
    try {
      parseContractRequest({ checks: [{ type: 'noDuplicates' }] }, 'the request body')
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(ConfigError)
    const message = (error as ConfigError).message
    expect(message).toContain('the request body')
    expect(message).toContain('checks[0].type')
    for (const type of CONTRACT_CHECK_TYPES) expect(message).toContain(`"${type}"`)
  })
})
