/**
 * `toolstorm mcp` with a server that goes wrong: one that does not start, one that exits in the
 * middle of a call, one that writes lines that are not JSON-RPC to stdout. The client gets what a
 * direct launch would give it, and the wrapper says what happened on stderr and in the report.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Report } from '../../src/engine/schema/report.js'
import { runCli } from '../helpers/cli.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { connectSdk, NOTES_SERVER, rawServer, readJson, textOf, wrappedCommand } from '../helpers/stdio-mcp.js'

/** Running, and not a zombie: a stopped child whose parent exited is reaped by PID 1, which in a container may never do it. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    // /proc/<pid>/stat: "pid (comm) state …"; Z is a process that ended and was not reaped.
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

/** Live processes whose command line contains `marker` (this test's server, as the shell or as `sleep`). */
function runningWith(marker: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker) && alive(pid)
      } catch {
        return false
      }
    })
}

const INITIALIZE = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }

describe('toolstorm mcp: a server that goes wrong', () => {
  it('a server command that does not exist: exit 127, the command named on stderr, nothing on stdout', async () => {
    const result = await runCli(['mcp', '--', 'no-such-mcp-server-xyz', '--flag'])
    expect(result.code).toBe(127)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain('Failed to start the MCP server "no-such-mcp-server-xyz": command not found. Check the command after "--".')
  })

  it('a command line the parser refuses after the server was launched early: exit 2, and the server is stopped (nothing left running)', async () => {
    // Launched by bin/toolstorm.js before the parser ran (mcp-launch.ts), then refused by it: a
    // shell that waits. Its command line carries a marker, found in /proc whether it is still the
    // shell or already `sleep`, so no pid file is needed: with Node's compile cache (22.1+) the
    // parser may refuse before the shell could write one (seen on Node 24 in a full run).
    const marker = `60.${process.pid}${Date.now() % 100_000}`
    const result = await runCli(['mcp', '--clock', 'sundial', '--', '/bin/sh', '-c', `exec sleep ${marker}`])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('sundial')
    await expect.poll(() => runningWith(marker), { timeout: 5_000 }).toEqual([])
  })

  it('without a server command: a usage error (exit 2)', async () => {
    const result = await runCli(['mcp', '--rules', 'x.yaml'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('give the MCP server\'s command after "--"')
  })

  it('a server that exits in the middle of a call: the client gets the error a crashed server gives, the report records the call as failed, the wrapper exits with the server\'s code', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const report = path.join(folder, 'report.json')
    const direct = rawServer(NOTES_SERVER)
    const wrapped = rawServer(wrappedCommand(NOTES_SERVER, ['--report', report]))
    for (const server of [direct, wrapped]) {
      server.send(INITIALIZE)
      await server.lines(1)
      server.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
      server.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'exit_now', arguments: { code: 3 } } })
    }
    const [directExit, wrappedExit] = await Promise.all([direct.exited(), wrapped.exited()])
    expect(wrappedExit).toEqual(directExit)
    expect(wrappedExit).toEqual({ code: 3, signal: null })
    const call = (await readJson<Report>(report)).calls.find((c) => c.route === 'tools/call exit_now')
    expect(call).toMatchObject({ outcome: 'error', error: 'MCP_SERVER_EXITED', executed: true, mcp: { outcome: null } })
    expect(wrapped.stderr()).toContain('the MCP server exited (exit code 3)')

    // The SDK client: the pending call fails as with a direct launch.
    const connection = await connectSdk(wrappedCommand(NOTES_SERVER, []))
    const error = await connection.client.callTool({ name: 'exit_now', arguments: { code: 3 } }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(McpError)
    expect((error as McpError).code).toBe(ErrorCode.ConnectionClosed)
  })

  it('lines that are not JSON-RPC on the server\'s stdout are relayed and counted; the wrapper goes on', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const report = path.join(folder, 'report.json')
    const connection = await connectSdk(wrappedCommand(NOTES_SERVER, ['--report', report]))
    expect(textOf(await connection.client.callTool({ name: 'print_garbage', arguments: {} }))).toBe('answered after the garbage')
    expect(textOf(await connection.client.callTool({ name: 'print_garbage', arguments: {} }))).toBe('answered after the garbage')
    expect(textOf(await connection.client.callTool({ name: 'count', arguments: {} }))).toBe('1')
    // The SDK client could not parse the relayed lines, as it could not parse them from the server directly.
    expect(connection.errors.map((error) => error.name)).toEqual(['SyntaxError', 'SyntaxError'])
    await connection.close()
    expect(connection.stderr()).toContain('the MCP server wrote a line that is not a JSON-RPC message to stdout')
    expect(connection.stderr()).toContain('the MCP server wrote 2 line(s) to stdout that are not JSON-RPC messages (relayed to the client)')
    expect((await readJson<Report>(report)).calls.map((call) => call.mcp?.outcome)).toEqual(['result', 'result', 'result', 'result'])
  })
})
