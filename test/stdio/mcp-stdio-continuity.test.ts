/**
 * One run across reconnects (`toolstorm mcp --state-dir`): an agent whose connection ended after
 * `response_lost` or `crash` launches the wrapper again, as the TypeScript SDK client does when its
 * code reconnects, and the new launch continues the run: the rule on call #1 does not fire again
 * on the retry, effects and ordinals go on, and the one report (and recording) covers every launch.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Report } from '../../src/engine/schema/report.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { runCli } from '../helpers/cli.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { closed, connectSdk, FILESYSTEM_SERVER, NOTES_SERVER, rawServer, readJson, rulesFile, textOf, wrappedCommand } from '../helpers/stdio-mcp.js'

/** The McpError code a call failed with, or null when it resolved. */
async function failureCode(call: Promise<unknown>): Promise<number | null> {
  try {
    await call
    return null
  } catch (error) {
    expect(error).toBeInstanceOf(McpError)
    return (error as McpError).code
  }
}

const INITIALIZE = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }

describe('toolstorm mcp --state-dir: one run across reconnects', () => {
  it('response_lost on create_note #1: the agent reconnects and retries, the retry succeeds (ordinal 2, no fault), the note is committed twice, and the one report shows both launches, the rule fired once, and check finds the duplicate', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const report = path.join(folder, 'report.json')
    const notes = path.join(folder, 'notes.txt')
    const rules = await rulesFile(folder, [{ name: 'lost-note', route: 'tools/call create_note', kind: 'response_lost', calls: [1] }])
    const command = wrappedCommand(NOTES_SERVER, ['--rules', rules, '--report', report, '--state-dir', path.join(folder, 'state')])

    const first = await connectSdk(command, { NOTES_FILE: notes })
    const ended = closed(first)
    expect(await failureCode(first.client.callTool({ name: 'create_note', arguments: { key: 'order-1' } }))).toBe(ErrorCode.ConnectionClosed)
    await ended
    // The agent's reconnect path: the same command again, then the same call.
    const second = await connectSdk(command, { NOTES_FILE: notes })
    const retry = await second.client.callTool({ name: 'create_note', arguments: { key: 'order-1' } })
    expect(retry.structuredContent).toMatchObject({ key: 'order-1' })
    expect(second.stderr()).toMatch(/launch 2 of the run saved in .*mcp-[0-9a-f]{16}\.json/)
    await second.close()

    expect(await readFile(notes, 'utf8')).toBe('order-1\norder-1\n')
    const written = await readJson<Report>(report)
    expect(written.calls.map((call) => [call.id, call.route, call.ordinal, call.fault, call.outcome, call.mcp?.session])).toEqual([
      [1, 'initialize', 1, null, 'response', 'stdio-1'],
      [2, 'tools/call create_note', 1, 'lost-note', 'reset', 'stdio-1'],
      [3, 'initialize', 2, null, 'response', 'stdio-2'],
      [4, 'tools/call create_note', 2, null, 'response', 'stdio-2'],
    ])
    expect(written.coverage['lost-note']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
    // Both commits, each under the call that made it, with one identity: the same logical note.
    expect(written.effects.map((effect) => [effect.name, effect.key, effect.call, effect.identity])).toEqual([
      ['note', 'order-1', 2, 1],
      ['note', 'order-1', 4, 1],
    ])
    expect(written.recovery).toMatchObject([{ call: 2, rule: 'lost-note', recovered: true }])
    const check = await runCli(['check', report])
    expect(check.code).toBe(1)
    expect(check.stdout).toMatch(/FAIL[\s\S]*No duplicate side effects/)
  })

  it('crash on write_file #1 (the reference filesystem server): the agent reconnects, finds whether the write happened, writes once; the report shows both launches and the rule fired once', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const dir = path.join(folder, 'data')
    await mkdir(dir)
    const report = path.join(folder, 'report.json')
    const rules = await rulesFile(folder, [{ name: 'die-writing', route: 'tools/call write_file', kind: 'crash', calls: [1] }])
    const command = wrappedCommand([...FILESYSTEM_SERVER, dir], ['--rules', rules, '--report', report, '--state-dir', path.join(folder, 'state')])
    const target = path.join(dir, 'order.txt')

    const first = await connectSdk(command)
    const ended = closed(first)
    expect(await failureCode(first.client.callTool({ name: 'write_file', arguments: { path: target, content: 'order 1' } }))).toBe(ErrorCode.ConnectionClosed)
    await ended
    // The server was killed with the call in it: committed or not. The agent looks before it writes again.
    const second = await connectSdk(command)
    const look = await second.client.callTool({ name: 'read_text_file', arguments: { path: target } })
    const wroteBefore = look.isError !== true
    if (!wroteBefore) expect(textOf(await second.client.callTool({ name: 'write_file', arguments: { path: target, content: 'order 1' } }))).toMatch(/Successfully wrote/)
    await second.close()

    expect(await readFile(target, 'utf8')).toBe('order 1')
    const written = await readJson<Report>(report)
    const writes = written.calls.filter((call) => call.route === 'tools/call write_file')
    expect(writes.map((call) => [call.ordinal, call.fault, call.injected, call.mcp?.session])).toEqual([[1, 'die-writing', true, 'stdio-1'], ...(wroteBefore ? [] : [[2, null, false, 'stdio-2']])])
    expect(written.calls.filter((call) => call.route === 'initialize').map((call) => [call.ordinal, call.mcp?.session])).toEqual([
      [1, 'stdio-1'],
      [2, 'stdio-2'],
    ])
    expect(written.calls.find((call) => call.route === 'tools/call read_text_file')).toMatchObject({ ordinal: 1, mcp: { session: 'stdio-2' } })
    expect(written.coverage['die-writing']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
  })

  it('a launch made while the previous one is still running waits for it to end, then continues its run', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const report = path.join(folder, 'report.json')
    const ready = path.join(folder, 'ready.json')
    const rules = await rulesFile(folder, [])
    const options = ['--rules', rules, '--report', report, '--state-dir', path.join(folder, 'state')]

    const first = await connectSdk(wrappedCommand(NOTES_SERVER, [...options, '--ready-file', ready]))
    expect(textOf(await first.client.callTool({ name: 'count', arguments: {} }))).toBe('1')
    const { pid } = await readJson<{ pid: number }>(ready)
    const second = rawServer(wrappedCommand(NOTES_SERVER, options))
    second.send(INITIALIZE)
    const answered = second.lines(1)
    // It holds off until the first launch saved the run.
    await expect.poll(() => second.stderr(), { timeout: 10_000 }).toContain(`waiting for the previous toolstorm mcp (pid ${pid}) to save the run`)
    await first.close()
    expect(JSON.parse((await answered)[0]!)).toMatchObject({ id: 0, result: { serverInfo: { name: 'notes' } } })
    second.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
    second.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'count', arguments: {} } })
    expect(JSON.parse((await second.lines(1))[0]!)).toMatchObject({ id: 1, result: { content: [{ text: '1' }] } })
    expect(await second.end()).toEqual({ code: 0, signal: null })

    const calls = (await readJson<Report>(report)).calls
    expect(calls.map((call) => [call.route, call.ordinal, call.mcp?.session])).toEqual([
      ['initialize', 1, 'stdio-1'],
      ['tools/call count', 1, 'stdio-1'],
      ['initialize', 2, 'stdio-2'],
      ['tools/call count', 2, 'stdio-2'],
    ])
  })

  it('recording across launches: one cassette holds both launches\' exchanges, numbered on, and loads as a valid cassette', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const cassetteFile = path.join(folder, 'session.cassette.jsonl')
    const rules = await rulesFile(folder, [{ name: 'lost-count', route: 'tools/call count', kind: 'response_lost', calls: [1] }])
    const command = wrappedCommand(NOTES_SERVER, ['--rules', rules, '--record', cassetteFile, '--state-dir', path.join(folder, 'state')])

    const first = await connectSdk(command)
    const ended = closed(first)
    expect(await failureCode(first.client.callTool({ name: 'count', arguments: {} }))).toBe(ErrorCode.ConnectionClosed)
    await ended
    const second = await connectSdk(command)
    expect(textOf(await second.client.callTool({ name: 'count', arguments: {} }))).toBe('1')
    await second.close()

    const cassette = await Cassette.load(cassetteFile)
    expect(cassette.exchanges.map((exchange) => [exchange.seq, exchange.route, exchange.ordinal, exchange.outcome, exchange.mcp?.session])).toEqual([
      [1, 'initialize', 1, 'response', 'stdio-1'],
      [2, 'tools/call count', 1, 'reset', 'stdio-1'],
      [3, 'initialize', 2, 'response', 'stdio-2'],
      [4, 'tools/call count', 2, 'response', 'stdio-2'],
    ])
  })

  it('without --state-dir a relaunch is a new run: the rule fires again on its call #1, and the launch that replaces the report says so', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const report = path.join(folder, 'report.json')
    const rules = await rulesFile(folder, [{ name: 'lost-count', route: 'tools/call count', kind: 'response_lost', calls: [1] }])
    const launch = async () => {
      const connection = await connectSdk(wrappedCommand(NOTES_SERVER, ['--rules', rules, '--report', report]))
      const ended = closed(connection)
      expect(await failureCode(connection.client.callTool({ name: 'count', arguments: {} }))).toBe(ErrorCode.ConnectionClosed)
      await ended
      return connection.stderr()
    }
    expect(await launch()).not.toContain('it replaced the one there')
    expect(await launch()).toContain(`report written to ${report} (it replaced the one there, which this launch's calls do not include: if that was an earlier launch of this server, give --state-dir to make the launches one run)`)
    expect((await readJson<Report>(report)).calls.map((call) => [call.route, call.ordinal, call.fault, call.mcp?.session])).toEqual([
      ['initialize', 1, null, 'stdio-1'],
      ['tools/call count', 1, 'lost-count', 'stdio-1'],
    ])
  })

  it('a launch under other rules begins a new run (and says so); a state file that is not one fails the start, naming it', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const report = path.join(folder, 'report.json')
    const state = path.join(folder, 'state')
    const once = async (rules: string) => {
      const server = rawServer(wrappedCommand(NOTES_SERVER, ['--rules', rules, '--report', report, '--state-dir', state]))
      server.send(INITIALIZE)
      await server.lines(1)
      server.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'count', arguments: {} } })
      await server.lines(1)
      expect(await server.end()).toEqual({ code: 0, signal: null })
      return server.stderr()
    }
    await once(await rulesFile(folder, [], 'a.json'))
    const stderr = await once(await rulesFile(folder, [{ name: 'slow', route: 'tools/call count', kind: 'latency', delay: 0.01 }], 'b.json'))
    expect(stderr).toMatch(/the run saved in .* was made under other rules: a new run begins/)
    expect((await readJson<Report>(report)).calls.map((call) => [call.route, call.ordinal, call.mcp?.session])).toEqual([
      ['initialize', 1, 'stdio-1'],
      ['tools/call count', 1, 'stdio-1'],
    ])

    const [stateFile] = (await import('node:fs')).readdirSync(state).filter((name) => name.endsWith('.json'))
    await writeFile(path.join(state, stateFile!), JSON.stringify({ version: 1, kind: 'toolstorm.mcp-run-state', runs: 'many' }))
    const broken = rawServer(wrappedCommand(NOTES_SERVER, ['--rules', path.join(folder, 'b.json'), '--state-dir', state]))
    expect((await broken.exited()).code).toBe(2)
    expect(broken.stderr()).toContain(`Failed to continue the run saved in ${path.join(state, stateFile!)}`)
    expect(broken.stderr()).toContain('Delete the file to begin a new run.')
    expect(broken.stderr()).toContain('(ERR_CONFIG_INVALID)')
  })
})
