import { describe, expect, it } from 'vitest'
import { ConfigError, EffectError } from '../errors.js'
import { type JudgeInput, unjudgedClaims } from './evidence/claims-judge.js'
import { createStorm, parseConfig } from './storm.js'

const shipUrl = new URL('http://tools.test/ship')

describe('storm configuration', () => {
  it('accepts a ToolStorm rule document with "tool" renamed to "route"', () => {
    const toolstormRule = { name: 'lost-ack', tool: 'ship', kind: 'response_lost', calls: [1], probability: 1.0, limit: null, delay: 0.0, replacement: null }
    const { tool, ...rest } = toolstormRule
    const config = parseConfig({ rules: [{ ...rest, route: tool }] })
    expect(config.rules[0]).toMatchObject({ name: 'lost-ack', route: 'ship', kind: 'response_lost', calls: [1] })
    expect(config).toMatchObject({ version: 1, seed: 0, routes: {} })
  })

  it('rejects unknown keys, naming the field, with the docs link once (#30)', () => {
    expect(() => parseConfig({ rules: [{ name: 'r', route: 'x', kind: 'timeout', tool: 'x' }] }, 'rules.json')).toThrow(
      'Failed to load rules from rules.json: $.rules[0]: unknown field "tool" (check the spelling). See https://github.com/toolstorm/toolstorm/blob/main/docs/rules.md.',
    )
  })

  it('rejects an unknown kind, listing the kinds', () => {
    expect(() => parseConfig({ rules: [{ name: 'r', route: 'x', kind: 'rate-limit' }] }, 'rules.json')).toThrow(/\$\.rules\[0\]\.kind: expected "kind" to be one of "timeout", "rate_limit"/)
  })

  it.each([
    [{ probability: 2 }, '$.rules[0].probability: expected a probability between 0 and 1'],
    [{ probability: -1 }, '$.rules[0].probability: expected a probability between 0 and 1'],
    [{ calls: [0] }, '$.rules[0].calls[0]: expected positive integer ordinals'],
    [{ calls: [1, 1] }, '$.rules[0].calls: expected ordinals without duplicates'],
    [{ calls: [true] }, '$.rules[0].calls[0]: expected positive integer ordinals'],
    [{ limit: 0 }, '$.rules[0].limit: expected a positive integer or null'],
    [{ delay: -1 }, '$.rules[0].delay: expected a finite nonnegative number of seconds'],
    [{ name: '' }, '$.rules[0].name: expected a rule name (1–100 characters)'],
  ])('rejects bad rule field %j', (patch, message) => {
    expect(() => parseConfig({ rules: [{ name: 'r', route: 'x', kind: 'timeout', ...patch }] }, 'f')).toThrow(message)
  })

  it('rejects duplicate rule names and bad seeds', () => {
    expect(() => parseConfig({ rules: [{ name: 'r', route: 'x', kind: 'timeout' }, { name: 'r', route: 'y', kind: 'reset' }] })).toThrow('$.rules[1].name: expected a unique rule name ("r" is also rules[0])')
    expect(() => parseConfig({ seed: 2 ** 60 })).toThrow('$.seed: expected an integer seed within ±(2^53−1)')
    expect(() => parseConfig({ seed: true })).toThrow(ConfigError)
  })

  it('rejects a malformed route spec with what it expected', () => {
    expect(() => parseConfig({ routes: { ship: 'ship' } })).toThrow('$.routes.ship: expected "METHOD /path" (for example "POST /shipments"), optionally with an origin')
  })

  it('rejects fields that belong to another kind', () => {
    expect(() => parseConfig({ rules: [{ name: 'r', route: 'x', kind: 'timeout', status: 500 }] })).toThrow('unknown field "status"')
  })
})

describe('effects', () => {
  it('gives the same raw (name, key) the same identity and distinct secrets distinct ones', () => {
    const storm = createStorm({ redact: { keys: [], secrets: ['private-a', 'private-b'] } })
    const a = storm.begin({ method: 'POST', url: shipUrl, headers: {} })
    const b = storm.begin({ method: 'POST', url: shipUrl, headers: {} })
    storm.effect('shipment', 'private-a', { call: a.id })
    storm.effect('shipment', 'private-b', { call: b.id })
    storm.effect('shipment', 'private-a', { call: b.id })
    const effects = storm.report().effects
    expect(effects.map((e) => [e.key, e.identity, e.redacted])).toEqual([
      ['[REDACTED]', 1, true],
      ['[REDACTED]', 2, true],
      ['[REDACTED]', 1, true],
    ])
  })

  it('refuses an effect with no exchange, naming what to pass', () => {
    const storm = createStorm()
    expect(() => storm.effect('shipment', 'k')).toThrow(EffectError)
    expect(() => storm.effect('shipment', 'k')).toThrow("Failed to record an effect: no exchange is active here. Call effect() inside a tool handler, or pass the request's x-toolstorm-call header as { call }.")
    expect(() => storm.effect('shipment', 'k', { call: 'nope' })).toThrow('no exchange "nope" in this storm')
    expect(() => storm.effect('', 'k', { call: 'nope' })).toThrow('name and key must be strings of 1–200 characters')
  })
})

describe('reports', () => {
  it('are detached snapshots', () => {
    const storm = createStorm({ rules: [{ name: 'r', route: 'POST /ship', kind: 'replace', replacement: { ok: true } }] })
    storm.begin({ method: 'POST', url: shipUrl, headers: {} })
    const first = storm.report()
    first.calls[0]!.route = 'mutated'
    ;(first.rules[0]!.replacement as { ok: boolean }).ok = false
    const second = storm.report()
    expect(second.calls[0]!.route).toBe('POST /ship')
    expect(second.rules[0]!.replacement).toEqual({ ok: true })
  })

  it('redact credentials in URLs, keys and rule replacements', () => {
    const token = 'sk-' + 'proj-' + 'A'.repeat(30) + 'b1c2d3e4f5'
    const storm = createStorm({ rules: [{ name: 'r', route: '*', kind: 'replace', replacement: { api_key: 'x', note: `use ${token}` } }] })
    storm.begin({ method: 'GET', url: new URL(`http://user:hunter2@tools.test/x?api_key=${token}&page=2`), headers: { 'x-toolstorm-key': token } })
    const text = JSON.stringify(storm.report())
    expect(text).not.toContain(token)
    expect(text).not.toContain('hunter2')
    expect(text).toContain('page=2')
  })
})

describe('claims', () => {
  const claim = { tool: 'ship', toolCallId: null, status: 'failure', source: 'api', traceId: null, spanId: null } as const

  it('are reported unverified and joined to no call by a storm given no judge', async () => {
    const storm = createStorm({ commits: ['ship'] })
    await storm.ledger.addClaim(claim)
    expect(storm.report().claims).toEqual([expect.objectContaining({ id: 1, tool: 'ship', status: 'failure', verdict: 'unverified', calls: [], effects: [], commits: false })])
  })

  it('are judged by the judge the storm was given, with the run and what says a tool commits', async () => {
    const seen: JudgeInput[] = []
    const storm = createStorm({ commits: ['ship'] }, { judgeClaims: (input) => (seen.push(input), unjudgedClaims(input).map((judged) => ({ ...judged, verdict: 'confirmed' as const }))) })
    await storm.ledger.addClaim(claim)
    expect(storm.report().claims?.map((judged) => judged.verdict)).toEqual(['confirmed'])
    expect(storm.claimsOf('default')?.map((judged) => judged.verdict)).toEqual(['confirmed'])
    expect(seen[0]).toMatchObject({ claims: [expect.objectContaining({ tool: 'ship' })], commits: { globs: ['ship'] } })
  })
})
