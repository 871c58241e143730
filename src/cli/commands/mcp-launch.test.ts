import { describe, expect, it } from 'vitest'
import { prescan } from './mcp-launch.js'

describe('prescan: what toolstorm mcp can launch before its command line is parsed', () => {
  it('reads the launch options as the parser would, with its defaults', () => {
    expect(prescan(['--rules', 'r.yaml', '--state-dir=/tmp/s', '--admin-port', '8790', '--live', 'a', '--live', 'b', '--no-exit-with-parent', '--print-admin-token', '--', 'npx', '-y', 'server', '--', 'x'])).toEqual({
      host: '127.0.0.1',
      adminPort: 8790,
      adminToken: undefined,
      stateDir: '/tmp/s',
      command: ['npx', '-y', 'server', '--', 'x'],
    })
    expect(prescan(['--host', '::1', '--admin-token=a-token-of-16-chars', '--', 'server'])).toMatchObject({ host: '::1', adminPort: 0, adminToken: 'a-token-of-16-chars' })
  })

  it.each([
    ['no server command', ['--rules', 'r.yaml']],
    ['nothing after --', ['--']],
    ['a replay', ['--replay', 'c.jsonl', '--live', 'x', '--', 'server']],
    ['help', ['--help', '--', 'server']],
    ['an option it does not know', ['--bogus', '--', 'server']],
    ['a short flag', ['-h', '--', 'server']],
    ['a value that looks like a flag', ['--rules', '--seed', '--', 'server']],
    ['a port that is not one', ['--admin-port', '99999', '--', 'server']],
    ['a repeated option the parser would read as a list', ['--host', 'a', '--host', 'b', '--', 'server']],
    ['a positional', ['extra', '--', 'server']],
  ])('leaves the launch to the handler for %s', (_name, argv) => {
    expect(prescan(argv)).toBeNull()
  })
})
