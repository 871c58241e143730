import { stat } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { exchangeAt } from '../helpers/cassette-fixtures.js'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'

// Issue #15 item 5: ordinary mistakes exit 2 (bad input), not 3 (a bug in toolstorm).

describe('numeric flags', () => {
  it.for<[string[], string]>([
    [['proxy', '--port', 'abc'], '--port: expected an integer 0-65535, got "abc"'],
    [['proxy', '--port', '0', '--admin-port', '70000'], '--admin-port: expected an integer 0-65535, got "70000"'],
    [['proxy', '--seed', 'abc'], '--seed: expected an integer within ±(2^53−1), got "abc"'],
    [['proxy', '--connect-port', '8443', '--connect-port', 'x'], '--connect-port: expected an integer 1-65535, got "x"'],
    [['record', 'out.jsonl', '--body-limit', '1.5'], '--body-limit: expected an integer 0-67108864, got "1.5"'],
    [['replay', 'in.jsonl', '--port', '-1'], '--port: expected an integer 0-65535, got "-1"'],
    [['lab', '--port', '8o80'], '--port: expected an integer 0-65535, got "8o80"'],
    [['demo', '--seed', '1.5'], '--seed: expected an integer within ±(2^53−1), got "1.5"'],
    [['demo', '--probability', 'often'], '--probability: expected a number 0-1, got "often"'],
    [['check', 'report.json', '--max-tokens', 'lots'], '--max-tokens: expected a nonnegative integer, got "lots"'],
    [['proxy', '--port', '1', '--port', '2'], '--port: expected an integer 0-65535 once, got 2 values ("1", "2")'],
  ])('refuses %j with exit 2, echoing what was typed', async ([args, message], { dir }) => {
    const result = await runCli(args, { cwd: dir, timeoutMs: 10_000 })
    expect(result.code).toBe(2)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain(`[toolstorm] ${message}. Run "toolstorm --help" for usage.`)
    expect(result.stderr).toContain('(ERR_USAGE)')
  })
})

describe('a port in use', () => {
  it('exits 2 from proxy, naming the port and the flag to change', async ({ taken }) => {
    const result = await runCli(['proxy', '--port', String(taken), '--admin-port', '0'], { timeoutMs: 10_000 })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`[toolstorm] Failed to start the server: port ${taken} on 127.0.0.1 is in use. Pass another --port, or --port 0 for any free one.`)
    expect(result.stderr).toContain('(ERR_PORT_IN_USE)')
  })

  it('names --admin-port when the admin port is the one taken', async ({ taken }) => {
    const result = await runCli(['proxy', '--target', 'http://127.0.0.1:9', '--port', '0', '--admin-port', String(taken)], { timeoutMs: 10_000 })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`Failed to start the admin API: port ${taken} on 127.0.0.1 is in use. Pass another --admin-port, or --admin-port 0 for any free one.`)
  })

  it('exits 2 from record and leaves no cassette behind', async ({ dir, taken }) => {
    const file = path.join(dir, 'never.jsonl')
    const result = await runCli(['record', file, '--target', 'http://127.0.0.1:9', '--port', String(taken), '--admin-port', '0'], { timeoutMs: 10_000 })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`port ${taken} on 127.0.0.1 is in use. Pass another --port`)
    await expect(stat(file)).rejects.toThrow()
  })

  it('exits 2 from replay', async ({ dir, taken }) => {
    const file = path.join(dir, 'one.jsonl')
    await Cassette.from({}, [exchangeAt(1)]).save(file)
    const result = await runCli(['replay', file, '--port', String(taken), '--admin-port', '0'], { timeoutMs: 10_000 })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`port ${taken} on 127.0.0.1 is in use. Pass another --port, or --port 0 for any free one.`)
  })

  it('exits 2 when --host is not an address of this machine', async () => {
    const result = await runCli(['proxy', '--host', '192.0.2.1', '--port', '0', '--admin-port', '0'], { timeoutMs: 10_000 })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('cannot listen on "192.0.2.1" (EADDRNOTAVAIL): it is not an address of this machine.')
    expect(result.stderr).toContain('(ERR_USAGE)')
  })

  it('exits 2 from lab', async ({ taken }) => {
    const result = await runCli(['lab', '--port', String(taken)], { timeoutMs: 10_000 })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`[toolstorm] Failed to start the lab: port ${taken} on 127.0.0.1 is in use. Pass another --port, or --port 0 for any free one.`)
  })
})
