import { describe, expect, it } from 'vitest'
import { counterexampleReadme, reproduceCommands } from './counterexamples.js'
import type { ExploreVariationResult } from './explore-result.js'

const lost: ExploreVariationResult = {
  id: 'e3c56cbe',
  origin: 'single',
  steps: [{ route: 'POST /shipments', ordinal: 1, fault: 'response_lost', rule: { kind: 'response_lost' }, ruleName: 'explore 1: response_lost POST /shipments #1' }],
  run: 'explore-e3c56cbe',
  status: 'fail',
  fired: true,
  failed: [{ check: 'No duplicate side effects', detail: '1 duplicate effect(s) across 2 commits' }],
  exit: { code: 0, signal: null, timedOut: false },
  recovery: null,
  calls: 3,
  effects: 2,
  seconds: 0.4,
}

describe('a counterexample', () => {
  it('names the proxy flags of the explore (its --target, HTTPS) in the proxy command that reruns it, not the search flags', () => {
    const commands = reproduceCommands(lost, 'out/e3c56cbe', { command: ['node', 'agent.js'], rerunFlags: ['--target', 'http://127.0.0.1:4000', '--admin-port', '9788', '--faults', 'response_lost', '--route', 'POST *', '--upstream-ca', 'ca.pem', '--no-claims'] })
    expect(commands.proxy).toBe('toolstorm proxy --target http://127.0.0.1:4000 --admin-port 9788 --upstream-ca ca.pem --rules out/e3c56cbe/rules.json')
    expect(commands.live).toBe("toolstorm explore --only e3c56cbe --target http://127.0.0.1:4000 --admin-port 9788 --faults response_lost --route 'POST *' --upstream-ca ca.pem --no-claims -- node agent.js")
  })

  it('says that the replay of a duplicate effect fails whatever the agent does now, and that a fix is checked live', () => {
    const commands = reproduceCommands(lost, 'out/e3c56cbe', { command: ['node', 'agent.js'], rerunFlags: [] })
    const readme = counterexampleReadme(lost, 'response_lost on POST /shipments #1', commands, true)
    expect(readme).toContain('The cassette holds the commits the tool servers made in that run: its replay fails on them whatever the agent does now. Check a fix live, with the command above.')
    const timeout = counterexampleReadme({ ...lost, failed: [{ check: 'Command exit', detail: 'exited 1' }] }, 'timeout on POST /shipments #1', commands, true)
    expect(timeout).not.toContain('whatever the agent does now')
  })
})
