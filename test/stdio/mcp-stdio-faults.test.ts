/**
 * Faults on a stdio MCP server through `toolstorm mcp`, as the official TypeScript SDK client
 * (`StdioClientTransport`) sees them, against the reference filesystem server (npm, unmodified)
 * and fixtures/stdio-mcp-server (a server that reports its commits), with the report and the
 * commit evidence checked.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Report } from '../../src/engine/schema/report.js'
import { runCli } from '../helpers/cli.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { closed, connectSdk, FILESYSTEM_SERVER, NOTES_SERVER, readJson, rulesFile, textOf, wrappedCommand } from '../helpers/stdio-mcp.js'

/** How a call failed: its McpError code and message, or null when it resolved. */
async function failure(call: Promise<unknown>): Promise<{ code: number; message: string } | null> {
  try {
    await call
    return null
  } catch (error) {
    expect(error).toBeInstanceOf(McpError)
    return { code: (error as McpError).code, message: (error as McpError).message }
  }
}

describe('toolstorm mcp: faults over stdio', () => {
  it('response_lost on write_file #1: the file is written, the SDK client gets no success (the connection closes as a crashed server\'s), the report names the tool and the rule', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const dir = path.join(folder, 'data')
    await mkdir(dir)
    const report = path.join(folder, 'report.json')
    const rules = await rulesFile(folder, [{ name: 'lost-write', route: 'tools/call write_file', kind: 'response_lost', calls: [1] }])
    const connection = await connectSdk(wrappedCommand([...FILESYSTEM_SERVER, dir], ['--rules', rules, '--report', report]))
    const ended = closed(connection)
    const target = path.join(dir, 'order.txt')

    const lost = await failure(connection.client.callTool({ name: 'write_file', arguments: { path: target, content: 'order 1' } }))
    expect(lost).toEqual({ code: ErrorCode.ConnectionClosed, message: 'MCP error -32000: Connection closed' })
    await ended
    expect(await readFile(target, 'utf8')).toBe('order 1')

    const written = await readJson<Report>(report)
    const call = written.calls.find((c) => c.route === 'tools/call write_file')
    expect(call).toMatchObject({ ordinal: 1, fault: 'lost-write', kind: 'response_lost', injected: true, executed: true, outcome: 'reset', mcp: { tool: 'write_file', outcome: null } })
    expect(written.coverage['lost-write']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
    expect(connection.stderr()).toContain('tools/call write_file: the answer is lost (rule "lost-write", response_lost)')
  })

  it('tool_error, rpc_error, timeout, latency and schema_drift answer as an MCP server would, per tool and ordinal', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const dir = path.join(folder, 'data')
    await mkdir(dir)
    await writeFile(path.join(dir, 'a.txt'), 'alpha')
    const report = path.join(folder, 'report.json')
    const rules = await rulesFile(folder, [
      { name: 'listing-fails', route: 'tools/call list_directory', kind: 'tool_error', message: 'disk on fire', calls: [1] },
      { name: 'info-breaks', route: 'tools/call get_file_info', kind: 'rpc_error', code: -32603, message: 'boom' },
      { name: 'slow-tree', route: 'tools/call directory_tree', kind: 'timeout', delay: 0.2 },
      { name: 'late-list', route: 'tools/list', kind: 'latency', delay: 0.3 },
      { name: 'drifted-read', route: 'tools/call read_text_file', kind: 'schema_drift' },
    ])
    const { client, close } = await connectSdk(wrappedCommand([...FILESYSTEM_SERVER, dir], ['--rules', rules, '--report', report]))
    const a = path.join(dir, 'a.txt')

    const started = performance.now()
    await client.listTools()
    expect(performance.now() - started).toBeGreaterThanOrEqual(290)
    expect(await client.callTool({ name: 'list_directory', arguments: { path: dir } })).toEqual({ content: [{ type: 'text', text: 'disk on fire' }], isError: true })
    expect(textOf(await client.callTool({ name: 'list_directory', arguments: { path: dir } }))).toBe('[FILE] a.txt')
    expect(await failure(client.callTool({ name: 'get_file_info', arguments: { path: a } }))).toEqual({ code: -32603, message: 'MCP error -32603: boom' })
    expect(await failure(client.callTool({ name: 'directory_tree', arguments: { path: dir } }))).toEqual({ code: ErrorCode.RequestTimeout, message: 'MCP error -32001: Request timed out: Upstream request timed out. (toolstorm: HTTP 504)' })
    // read_text_file declares outputSchema { content: string }: the drifted answer breaks it, and the SDK client checks.
    const drift = await failure(client.callTool({ name: 'read_text_file', arguments: { path: a } }))
    expect(drift?.code).toBe(ErrorCode.InvalidParams)
    expect(drift?.message).toMatch(/Structured content does not match the tool's output schema/)
    await close()

    const calls = (await readJson<Report>(report)).calls
    const faulted = calls.filter((call) => call.injected).map((call) => [call.route, call.ordinal, call.kind, call.mcp?.outcome, call.executed])
    expect(faulted).toEqual([
      ['tools/list', 1, 'latency', 'result', true],
      ['tools/call list_directory', 1, 'tool_error', 'isError', false],
      ['tools/call get_file_info', 1, 'rpc_error', 'error', false],
      ['tools/call directory_tree', 1, 'timeout', 'error', false],
      ['tools/call read_text_file', 1, 'schema_drift', 'result', true],
    ])
  })

  it('session_expired restarts the server behind the connection: the call gets -32001 Session not found, the next one reaches a new process whose state is gone', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const report = path.join(folder, 'report.json')
    const rules = await rulesFile(folder, [{ name: 'restart', route: 'tools/call count', kind: 'session_expired', calls: [3] }])
    const { client, close } = await connectSdk(wrappedCommand(NOTES_SERVER, ['--rules', rules, '--report', report]))
    const count = () => client.callTool({ name: 'count', arguments: {} })

    expect(textOf(await count())).toBe('1')
    expect(textOf(await count())).toBe('2')
    expect(await failure(count())).toEqual({ code: -32001, message: 'MCP error -32001: Session not found' })
    // A new server process, initialized with the client's own handshake: it counts from 1 again.
    expect(textOf(await count())).toBe('1')
    const note = await client.callTool({ name: 'create_note', arguments: { key: 'after-restart' } })
    expect(note.structuredContent).toMatchObject({ key: 'after-restart' })
    await close()

    const calls = (await readJson<Report>(report)).calls.filter((call) => call.route === 'tools/call count')
    expect(calls.map((call) => [call.ordinal, call.injected, call.executed, call.mcp?.outcome, call.mcp?.errorCode])).toEqual([
      [1, false, true, 'result', null],
      [2, false, true, 'result', null],
      [3, true, false, 'error', -32001],
      [4, false, true, 'result', null],
    ])
  })

  it('crash kills the server with the call in it: the client sees its server exit, the report says which call and rule', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const report = path.join(folder, 'report.json')
    const rules = await rulesFile(folder, [{ name: 'die', route: 'tools/call create_note', kind: 'crash', calls: [2] }])
    const connection = await connectSdk(wrappedCommand(NOTES_SERVER, ['--rules', rules, '--report', report]))
    const ended = closed(connection)
    await connection.client.callTool({ name: 'create_note', arguments: { key: 'one' } })
    expect(await failure(connection.client.callTool({ name: 'create_note', arguments: { key: 'two' } }))).toEqual({ code: ErrorCode.ConnectionClosed, message: 'MCP error -32000: Connection closed' })
    await ended
    const calls = (await readJson<Report>(report)).calls.filter((call) => call.route === 'tools/call create_note')
    expect(calls.map((call) => [call.ordinal, call.fault, call.injected, call.outcome])).toEqual([
      [1, null, false, 'response'],
      [2, 'die', true, 'reset'],
    ])
    expect(connection.stderr()).toContain('the MCP server was ended by the fault (signal SIGKILL)')
  })

  it('commit evidence: the server reads the call id from params._meta and reports its commits; with --lost-answer silent the client times out, retries on the same connection, and check finds the duplicate', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const report = path.join(folder, 'report.json')
    const notes = path.join(folder, 'notes.txt')
    const rules = await rulesFile(folder, [{ name: 'lost-note', route: 'tools/call create_note', kind: 'response_lost', calls: [1] }])
    const { client, close } = await connectSdk(wrappedCommand(NOTES_SERVER, ['--rules', rules, '--report', report, '--lost-answer', 'silent']), { NOTES_FILE: notes })

    const first = await failure(client.callTool({ name: 'create_note', arguments: { key: 'order-1' } }, undefined, { timeout: 1000 }))
    expect(first).toEqual({ code: ErrorCode.RequestTimeout, message: 'MCP error -32001: Request timed out' })
    const retry = await client.callTool({ name: 'create_note', arguments: { key: 'order-1' } })
    expect(retry.structuredContent).toMatchObject({ key: 'order-1' })
    await close()

    expect(await readFile(notes, 'utf8')).toBe('order-1\norder-1\n')
    const written = await readJson<Report>(report)
    const calls = written.calls.filter((call) => call.route === 'tools/call create_note')
    expect(calls.map((call) => [call.ordinal, call.injected, call.outcome])).toEqual([
      [1, true, 'reset'],
      [2, false, 'response'],
    ])
    expect(written.effects.map((effect) => [effect.name, effect.key, effect.call])).toEqual([
      ['note', 'order-1', calls[0]!.id],
      ['note', 'order-1', calls[1]!.id],
    ])
    const check = await runCli(['check', report])
    expect(check.code).toBe(1)
    expect(check.stdout).toMatch(/FAIL[\s\S]*No duplicate side effects/)
  })
})
