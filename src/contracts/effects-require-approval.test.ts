import { describe, expect, it } from 'vitest'
import { ConfigError } from '../errors.js'
import { VirtualClock } from '../engine/clock.js'
import { createStorm } from '../engine/storm.js'
import { contract } from './contract.js'
import { parseContractRequest, runContract } from './contract-request.js'

/** A run of approval calls (answered `approve`, null: no answer) and shipments committed, in order. */
function run(steps: ReadonlyArray<{ approve: number | null } | { ship: string }>) {
  const clock = new VirtualClock()
  const storm = createStorm({ rules: [] }, { clock })
  for (const step of steps) {
    clock.advance(0.01)
    if ('approve' in step) {
      const call = storm.begin({ method: 'POST', url: new URL('http://t.test/approve'), headers: {} })
      call.markExecuted()
      clock.advance(0.01)
      if (step.approve === null) call.finish('reset', null)
      else call.finish('response', step.approve)
    } else {
      const call = storm.begin({ method: 'POST', url: new URL('http://t.test/ship'), headers: {} })
      call.markExecuted()
      clock.advance(0.01)
      storm.effect('shipment', step.ship, { call: call.id })
      call.finish('response', 201)
    }
  }
  return storm.report()
}

const APPROVAL = { effect: 'shipment', route: 'POST /approve' }

describe('effectsRequireApproval', () => {
  it('passes when each shipment follows a 2xx answer from the approval route', () => {
    const checked = contract(run([{ approve: 200 }, { ship: 'o-1' }, { ship: 'o-2' }])).effectsRequireApproval(APPROVAL)
    expect(checked.checks).toEqual([{ name: 'Approval required: shipment', passed: true, detail: '2 "shipment" effect(s), each after a 2xx answer from "POST /approve"' }])
  })

  it('fails on a shipment after an approval service answered 503, naming the key, the call and what the route answered', () => {
    const checked = contract(run([{ approve: 503 }, { ship: 'o-1' }])).effectsRequireApproval(APPROVAL)
    expect(checked.passed).toBe(false)
    expect(checked.failures()).toEqual([
      'Approval required: shipment: 1 of 1 "shipment" effect(s) committed without a 2xx answer from "POST /approve" before them (first: key "o-1", call 2)',
      '    shipment key "o-1" committed by call 2 (POST /ship) at 0.030s: no 2xx answer from "POST /approve" before it (asked: call 1 response 503)',
    ])
  })

  it('does not count an approval that came after the commit, or one the client never received', () => {
    expect(contract(run([{ ship: 'o-1' }, { approve: 200 }])).effectsRequireApproval(APPROVAL).failures()[1]).toContain('(it never called that route before)')
    expect(contract(run([{ approve: null }, { ship: 'o-1' }])).effectsRequireApproval(APPROVAL).failures()[1]).toContain('(asked: call 1 reset)')
  })

  it('passes when nothing of that name committed (a fail-closed guard that did not ship)', () => {
    expect(contract(run([{ approve: 503 }])).effectsRequireApproval(APPROVAL).checks[0]).toMatchObject({ passed: true, detail: '0 "shipment" effect(s), each after a 2xx answer from "POST /approve"; no effect was reported in this run' })
  })

  it('runs the same as data (POST /contract) and refuses a check without its route', () => {
    const report = run([{ approve: 503 }, { ship: 'o-1' }])
    expect(runContract(report, parseContractRequest({ checks: [{ type: 'effectsRequireApproval', ...APPROVAL }] }, 'the test')).passed).toBe(false)
    expect(() => parseContractRequest({ checks: [{ type: 'effectsRequireApproval', effect: 'shipment' }] }, 'the test')).toThrow(/checks\[0\]\.route/)
    expect(() => contract(report).effectsRequireApproval({ effect: 'shipment', route: '' })).toThrow(ConfigError)
  })
})
