import { describe, expect, it } from 'vitest'
import { AnswerWaiters } from './answer-waiters.js'

describe('AnswerWaiters', () => {
  it('gives an answer to the earliest waiter for its id, and none to another id; says whether anyone took it', async () => {
    const gates = new AnswerWaiters<string | null>()
    const signal = new AbortController().signal
    const first = gates.expect(0, signal)
    const second = gates.expect(0, signal)
    const other = gates.expect('a', signal)
    expect(gates.pending).toBe(true)
    expect(gates.arrived(0, null)).toBe(true)
    expect(gates.arrived(0, 'refused: body differs')).toBe(true)
    expect(gates.arrived(1, null)).toBe(false)
    await expect(first).resolves.toBeNull()
    await expect(second).resolves.toBe('refused: body differs')
    gates.arrived('a', null)
    await expect(other).resolves.toBeNull()
    expect(gates.pending).toBe(false)
  })

  it('stops waiting when the client leaves: the wait rejects and the id is no longer pending', async () => {
    const gates = new AnswerWaiters<string | null>()
    const left = new AbortController()
    const waiting = gates.expect(3, left.signal)
    left.abort(new Error('the client left'))
    await expect(waiting).rejects.toThrow('the client left')
    expect(gates.pending).toBe(false)
  })
})
