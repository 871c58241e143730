/**
 * Explore's runner of a command (src/explore/command-runner.ts): once a run is forgotten, the
 * proxy holds nothing of it, its recorded exchanges included, so a long search stays flat (the
 * memory it saves is measured by `npm run bench -- explore-memory`).
 */
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { startCommandRunner } from '../../src/explore/command-runner.js'
import { ROOT } from '../helpers/cli.js'
import { closing } from '../helpers/teardown.js'

// Three calls through HTTP_PROXY (a read, a write, a read), answered at once.
const AGENT = [process.execPath, path.join(ROOT, 'bench/explore-agent.mjs'), '--delay', '0']

describe('explore: the runner of a command', () => {
  it('forgets a run whole: its calls, its rules and its recorded exchanges, and no other run', async () => {
    const runner = closing(await startCommandRunner({ command: AGENT, base: {} }))
    const rules = { version: 1 as const, seed: 0, routes: {}, rules: [] }
    for (const run of ['first', 'second']) expect((await runner.run({ run, rules, timeoutMs: 30_000 })).exit.code).toBe(0)
    expect((await runner.exchanges('first')).map((exchange) => exchange.route)).toEqual(['GET /inventory', 'POST /orders', 'GET /status'])
    await runner.forget('first')
    expect(await runner.exchanges('first')).toEqual([])
    expect((await runner.exchanges('second')).length).toBe(3)
    await expect(runner.cassette('first')).rejects.toMatchObject({ code: 'ERR_ADMIN_NOT_FOUND' })
  })
})
