import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ConfigError, ERROR_CODES, ToolstormError } from './errors.js'

describe('error codes', () => {
  it('are all documented in docs/errors.md with their exit code and HTTP status', () => {
    const doc = readFileSync(new URL('../docs/errors.md', import.meta.url), 'utf8')
    for (const [code, { exit, status }] of Object.entries(ERROR_CODES)) {
      expect(doc).toContain(`| \`${code}\` | ${exit} | ${status} |`)
    }
  })

  it('keep instanceof working for the base class and subclasses', () => {
    const error = new ConfigError('Failed to do X: because. Do Y.')
    expect(error).toBeInstanceOf(ToolstormError)
    expect(error).toBeInstanceOf(ConfigError)
    expect(new ToolstormError('ERR_STATE', 'x')).not.toBeInstanceOf(ConfigError)
    expect({ code: 'ERR_STATE' }).not.toBeInstanceOf(ToolstormError)
    expect(error.exitCode).toBe(2)
    expect(error.httpStatus).toBe(400)
    expect(error.name).toBe('ConfigError')
  })
})
