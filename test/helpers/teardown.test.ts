/**
 * The teardown helpers do their part when a case ends: the case after it sees the process gone and
 * the environment as it was. (Cases of one file run in order; each second case checks the first.)
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { describe, expect, it } from 'vitest'
import { closingChild, settingEnv } from './teardown.js'

const VARIABLE = 'TOOLSTORM_TEARDOWN_TEST'

/** Whether a process with this pid runs (signal 0 only checks). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('closingChild', () => {
  let pid = 0
  it('leaves a child running for the case that started it', async () => {
    const child = closingChild(spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' }))
    await once(child, 'spawn')
    pid = child.pid!
    expect(running(pid)).toBe(true)
  })

  it('has killed it, and waited for its exit, once that case ended', () => {
    expect(pid).toBeGreaterThan(0)
    expect(running(pid)).toBe(false)
  })
})

describe('settingEnv', () => {
  it('sets a variable for the case', () => {
    expect(process.env[VARIABLE]).toBeUndefined()
    process.env.TOOLSTORM_TEARDOWN_KEPT = 'before'
    settingEnv({ [VARIABLE]: 'set', TOOLSTORM_TEARDOWN_KEPT: 'during' })
    expect([process.env[VARIABLE], process.env.TOOLSTORM_TEARDOWN_KEPT]).toEqual(['set', 'during'])
  })

  it('deletes a variable that was unset and restores one that had a value, once the case ended', () => {
    expect(process.env[VARIABLE]).toBeUndefined()
    expect(process.env.TOOLSTORM_TEARDOWN_KEPT).toBe('before')
    delete process.env.TOOLSTORM_TEARDOWN_KEPT
  })
})
