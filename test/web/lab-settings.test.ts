import { describe, expect, it } from 'vitest'
import { POLICY_IDS } from '../../src/demo/agent.js'
import { memoryTransport } from '../../src/demo/memory-transport.js'
import { runDemo } from '../../src/demo/run-demo.js'
import { findingFor } from '../../web/lab/finding.js'
import { DEFAULT_SETTINGS, formatSettings, parseSettings } from '../../web/lab/url-config.js'

describe('the lab’s URL settings and findings', () => {
  it('round-trips settings through the query, and falls back to the defaults for invalid values', () => {
    const settings = { config: { scenario: 'rate_limit' as const, seed: 1729, probability: 0.65, maxCalls: 3 }, policy: 'resilient' as const }
    expect(formatSettings(settings)).toBe('?scenario=rate_limit&seed=1729&p=0.65&budget=3&policy=resilient')
    expect(parseSettings(formatSettings(settings))).toEqual(settings)
    expect(parseSettings('')).toEqual(DEFAULT_SETTINGS)
    expect(parseSettings('?scenario=nope&seed=1234567&p=2&budget=21&policy=yolo')).toEqual(DEFAULT_SETTINGS)
    expect(parseSettings('?seed=-1&budget=0&p=abc')).toEqual(DEFAULT_SETTINGS)
    expect(parseSettings('?p=0.33').config.probability).toBe(0.35)
  })

  it('words the finding as the reference lab does, first match wins', async () => {
    const at = async (scenario: 'lost_ack' | 'blackout', policy: (typeof POLICY_IDS)[number], probability = 1) => findingFor(await runDemo({ scenario, seed: 42, probability, maxCalls: 8 }, policy, memoryTransport))
    expect((await at('lost_ack', 'optimistic')).title).toBe('1 shipment committed. No confirmation received.')
    expect((await at('lost_ack', 'retry')).title).toBe('2 shipments for 1 order')
    expect((await at('lost_ack', 'retry')).details).toEqual(['No duplicate side effects: 1 duplicate effect(s) across 2 commits'])
    expect((await at('lost_ack', 'resilient')).title).toBe('1 shipment. All recovery checks passed.')
    expect((await at('blackout', 'resilient')).title).toBe('Stopped without claiming completion')
    expect(await at('lost_ack', 'resilient', 0)).toEqual({ tone: 'neutral', title: 'No failure was injected', details: [] })
  })
})
