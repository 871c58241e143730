/**
 * `toolstorm mcp -- <server>` with no rules is invisible: the reference MCP servers (npm,
 * unmodified) answer the official TypeScript SDK client and raw JSON-RPC lines through it exactly
 * as they answer directly, server-to-client requests (roots) included, and every request is a
 * call in the report, named by its tool.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { Report } from '../../src/engine/schema/report.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { connectSdk, FILESYSTEM_SERVER, MEMORY_SERVER, rawServer, readJson, wrappedCommand } from '../helpers/stdio-mcp.js'

/** One session of the SDK client against the filesystem server rooted at `dir` (emptied first). */
async function filesystemSession(command: string[], dir: string) {
  await rm(dir, { recursive: true, force: true })
  await mkdir(dir, { recursive: true })
  await writeFile(path.join(dir, 'hello.txt'), 'hello from the test\n')
  let rootsAsked = 0
  const { client, errors, close } = await connectSdk(command, {}, (client) =>
    client.setRequestHandler(ListRootsRequestSchema, () => {
      rootsAsked++
      return { roots: [{ uri: `file://${dir}`, name: 'data' }] }
    }),
  )
  const results = {
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
    tools: await client.listTools(),
    read: await client.callTool({ name: 'read_text_file', arguments: { path: path.join(dir, 'hello.txt') } }),
    write: await client.callTool({ name: 'write_file', arguments: { path: path.join(dir, 'new.txt'), content: 'written' } }),
    list: await client.callTool({ name: 'list_directory', arguments: { path: dir } }),
    outside: await client.callTool({ name: 'read_text_file', arguments: { path: '/etc/hostname' } }),
  }
  await close()
  return { results, errors, rootsAsked }
}

describe('toolstorm mcp: pass-through', () => {
  it('answers the SDK client as the filesystem server does directly, the server\'s roots/list request relayed to the client and its answer back', async () => {
    const dir = path.join(await temporaryFolder('toolstorm-stdio-'), 'data')
    const direct = await filesystemSession([...FILESYSTEM_SERVER, dir], dir)
    const reportFile = path.join(path.dirname(dir), 'report.json')
    const wrapped = await filesystemSession(wrappedCommand([...FILESYSTEM_SERVER, dir], ['--report', reportFile]), dir)

    expect(wrapped.results).toEqual(direct.results)
    expect(wrapped.results.outside.isError).toBe(true)
    expect(wrapped.errors).toEqual([])
    expect(wrapped.rootsAsked).toBe(1)
    expect(direct.rootsAsked).toBe(1)

    const report = await readJson<Report>(reportFile)
    expect(report.calls.map((call) => [call.route, call.outcome, call.mcp?.outcome])).toEqual([
      ['initialize', 'response', 'result'],
      ['tools/list', 'response', 'result'],
      ['tools/call read_text_file', 'response', 'result'],
      ['tools/call write_file', 'response', 'result'],
      ['tools/call list_directory', 'response', 'result'],
      ['tools/call read_text_file', 'response', 'isError'],
    ])
    expect(report.calls[3]?.mcp).toMatchObject({ method: 'tools/call', tool: 'write_file', arguments: { path: path.join(dir, 'new.txt'), content: 'written' } })
    expect(report.calls.map((call) => call.ordinal)).toEqual([1, 1, 1, 1, 1, 2])
  })

  it('relays the memory server\'s lines byte for byte, notifications included, and exits as it exits', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const session = async (command: string[]) => {
      const memory = path.join(folder, 'memory.jsonl')
      await rm(memory, { force: true })
      const server = rawServer(command, { MEMORY_FILE_PATH: memory })
      server.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })
      const [init] = await server.lines(1)
      server.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
      server.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' })
      server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'create_entities', arguments: { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] } } })
      server.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'read_graph', arguments: {} } })
      server.send({ jsonrpc: '2.0', id: 4, method: 'no/such/method' })
      const rest = await server.lines(4)
      return { lines: [init, ...rest], exit: await server.end(), stderr: server.stderr() }
    }
    const direct = await session(MEMORY_SERVER)
    const wrapped = await session(wrappedCommand(MEMORY_SERVER, []))
    // Each line byte for byte; the order of answers to requests in flight together is the server's (its tools run concurrently).
    expect([...wrapped.lines].sort()).toEqual([...direct.lines].sort())
    expect(wrapped.lines.map((line) => JSON.parse(line as string) as { id: unknown })).toContainEqual(expect.objectContaining({ id: 4, error: expect.objectContaining({ code: -32601 }) }))
    expect(wrapped.exit).toEqual(direct.exit)
    // The server's stderr passes through; the wrapper names its admin API there, never on stdout.
    expect(wrapped.stderr).toContain('Knowledge Graph MCP Server running on stdio')
    expect(wrapped.stderr).toMatch(/toolstorm mcp → .*mcp-server-memory \(pid \d+\) · admin http:\/\/127\.0\.0\.1:\d+/)
  })
})
