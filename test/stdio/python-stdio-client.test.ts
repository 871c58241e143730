/**
 * The official Python MCP SDK's stdio client (`stdio_client` + `ClientSession`, mcp from the test
 * venv) through `toolstorm mcp`, against the reference filesystem and memory servers (npm,
 * unmodified): the same answers as direct, `response_lost` on `write_file` #1, and a recorded
 * session replayed with no server (an extra call failing it). Client: fixtures/stdio-clients/.
 */
import { execFile } from 'node:child_process'
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import type { Report } from '../../src/engine/schema/report.js'
import { ROOT, runCli } from '../helpers/cli.js'
import { hasPythonModules, PYTHON } from '../helpers/python.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { connectSdk, FILESYSTEM_SERVER, MEMORY_SERVER, readJson, textOf, wrappedCommand } from '../helpers/stdio-mcp.js'

const CLIENT = path.join(ROOT, 'fixtures/stdio-clients/python_stdio_client.py')
/** A Python SDK stdio server whose tool reports its commit with report_effect(ctx, …). */
const PYTHON_SERVER = [PYTHON, path.join(ROOT, 'fixtures/python-mcp-server/stdio_server.py')]
type Step = ['list_tools'] | ['call', string, Record<string, unknown>, number?]

/** Run the Python client's `steps` against `command`; its results, one per step after `initialize`'s. */
async function pythonSession(command: string[], steps: Step[], env: Record<string, string> = {}, sample?: string): Promise<unknown[]> {
  const { stdout } = await promisify(execFile)(PYTHON, [CLIENT, JSON.stringify({ command, env, steps, ...(sample === undefined ? {} : { sample }) })], { cwd: ROOT, timeout: 60_000 })
  return JSON.parse(stdout) as unknown[]
}

const EVERYTHING_SERVER = [path.join(ROOT, 'node_modules/.bin/mcp-server-everything'), 'stdio']
const ADA = { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] }
const MEMORY_STEPS: Step[] = [['list_tools'], ['call', 'create_entities', ADA], ['call', 'read_graph', {}]]

describe.skipIf(!hasPythonModules('mcp'))('toolstorm mcp with the Python SDK\'s stdio client', () => {
  it('answers as the memory server does directly', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-py-')
    const memory = path.join(folder, 'memory.jsonl')
    const direct = await pythonSession(MEMORY_SERVER, MEMORY_STEPS, { MEMORY_FILE_PATH: memory })
    await rm(memory)
    const wrapped = await pythonSession(wrappedCommand(MEMORY_SERVER, []), MEMORY_STEPS, { MEMORY_FILE_PATH: memory })
    expect(wrapped).toEqual(direct)
    expect(wrapped[3]).toMatchObject({ structured_content: { entities: [{ name: 'Ada' }], relations: [] }, is_error: false })
  })

  it('response_lost on write_file #1: the file is written, the client gets no success and its session ends; the report names the tool and the rule', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-py-')
    const dir = path.join(folder, 'data')
    await mkdir(dir)
    const rules = path.join(folder, 'rules.json')
    await writeFile(rules, JSON.stringify({ rules: [{ name: 'lost-write', route: 'tools/call write_file', kind: 'response_lost', calls: [1] }] }))
    const report = path.join(folder, 'report.json')
    const target = path.join(dir, 'order.txt')
    const results = await pythonSession(wrappedCommand([...FILESYSTEM_SERVER, dir], ['--rules', rules, '--report', report]), [['call', 'write_file', { path: target, content: 'order 1' }]])

    expect(await readFile(target, 'utf8')).toBe('order 1')
    expect(results).toHaveLength(2)
    expect(results[1]).toEqual({ error: 'MCPError', code: -32000, message: 'Connection closed' })
    const call = (await readJson<Report>(report)).calls.find((c) => c.route === 'tools/call write_file')
    expect(call).toMatchObject({ fault: 'lost-write', kind: 'response_lost', injected: true, executed: true, outcome: 'reset', mcp: { tool: 'write_file' } })
  })

  it('a Python SDK stdio server reports its commits with report_effect(ctx, …): the call id read from the request\'s _meta through its Context, each effect under its call, and check finds the duplicate', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-py-')
    const report = path.join(folder, 'report.json')
    const shipments = path.join(folder, 'shipments.txt')
    const { client, close } = await connectSdk(wrappedCommand(PYTHON_SERVER, ['--report', report]), { SHIPMENTS_FILE: shipments })
    for (let i = 0; i < 2; i++) {
      const result = await client.callTool({ name: 'create_shipment', arguments: { order_id: 'order-1' } })
      expect(JSON.parse(textOf(result))).toEqual({ order_id: 'order-1', reported: true })
    }
    await close()

    expect(await readFile(shipments, 'utf8')).toBe('order-1\norder-1\n')
    const written = await readJson<Report>(report)
    const calls = written.calls.filter((call) => call.route === 'tools/call create_shipment').map((call) => call.id)
    expect(written.effects.map((effect) => [effect.name, effect.key, effect.call])).toEqual([
      ['shipment', 'order-1', calls[0]],
      ['shipment', 'order-1', calls[1]],
    ])
    const check = await runCli(['check', report])
    expect(check.code).toBe(1)
    expect(check.stdout).toMatch(/FAIL[\s\S]*No duplicate side effects/)

    // Launched directly, the request carries no call id: the helper skips the report.
    const direct = await connectSdk(PYTHON_SERVER, { SHIPMENTS_FILE: shipments })
    expect(JSON.parse(textOf(await direct.client.callTool({ name: 'create_shipment', arguments: { order_id: 'order-2' } })))).toEqual({ order_id: 'order-2', reported: false })
  })

  it('replays a recorded session with no server; an extra call fails it', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-py-')
    const cassette = path.join(folder, 'session.cassette.jsonl')
    const recorded = await pythonSession(wrappedCommand(MEMORY_SERVER, ['--record', cassette]), MEMORY_STEPS, { MEMORY_FILE_PATH: path.join(folder, 'memory.jsonl') })
    const replayed = await pythonSession(wrappedCommand([], ['--replay', cassette]), MEMORY_STEPS)
    expect(replayed).toEqual(recorded)
    const extra = await pythonSession(wrappedCommand([], ['--replay', cassette]), [...MEMORY_STEPS, ['call', 'read_graph', {}]])
    expect(extra.slice(0, 4)).toEqual(recorded)
    expect(extra[4]).toMatchObject({ error: 'MCPError', code: -32603 })
    expect((extra[4] as { message: string }).message).toMatch(/toolstorm: HTTP 422/)
  })

  it('replays a sampling request to the client\'s sampling callback with no server; a callback that answers otherwise gets an error for the call', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-py-')
    const cassette = path.join(folder, 'session.cassette.jsonl')
    const steps: Step[] = [['call', 'trigger-sampling-request', { prompt: 'ship 2 boxes', maxTokens: 20 }]]
    const recorded = await pythonSession(wrappedCommand(EVERYTHING_SERVER, ['--record', cassette]), steps, {}, 'two boxes')
    expect(recorded[1]).toMatchObject({ is_error: false })
    expect(recorded[2]).toEqual({ sampled: ['Resource trigger-sampling-request context: ship 2 boxes'] })

    expect(await pythonSession(wrappedCommand([], ['--replay', cassette]), steps, {}, 'two boxes')).toEqual(recorded)
    const other = await pythonSession(wrappedCommand([], ['--replay', cassette]), steps, {}, 'three boxes')
    expect(other[1]).toMatchObject({ error: 'MCPError', code: -32603 })
    expect((other[1] as { message: string }).message).toContain('the client answered the server\'s sampling/createMessage otherwise than when recorded ($.result.content.text: "two boxes" ≠ "three boxes")')
    expect(other[2]).toEqual(recorded[2])
  })

  it('tool_error, rpc_error and timeout answer per tool; crash ends the session as a dead server does', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-py-')
    const rules = path.join(folder, 'rules.json')
    await writeFile(
      rules,
      JSON.stringify({
        rules: [
          { name: 'graph-fails', route: 'tools/call read_graph', kind: 'tool_error', message: 'graph on fire', calls: [1] },
          { name: 'search-breaks', route: 'tools/call search_nodes', kind: 'rpc_error', code: -32603, message: 'boom' },
          { name: 'open-hangs', route: 'tools/call open_nodes', kind: 'timeout', delay: 0.2 },
          { name: 'die', route: 'tools/call create_entities', kind: 'crash' },
        ],
      }),
    )
    const results = await pythonSession(
      wrappedCommand(MEMORY_SERVER, ['--rules', rules]),
      [['call', 'read_graph', {}], ['call', 'read_graph', {}], ['call', 'search_nodes', { query: 'x' }], ['call', 'open_nodes', { names: ['x'] }], ['call', 'create_entities', ADA]],
      { MEMORY_FILE_PATH: path.join(folder, 'memory.jsonl') },
    )
    expect(results[1]).toMatchObject({ content: [{ type: 'text', text: 'graph on fire' }], is_error: true })
    expect(results[2]).toMatchObject({ structured_content: { entities: [], relations: [] }, is_error: false })
    expect(results[3]).toEqual({ error: 'MCPError', code: -32603, message: 'boom' })
    expect(results[4]).toEqual({ error: 'MCPError', code: -32001, message: 'Request timed out: Upstream request timed out. (toolstorm: HTTP 504)' })
    expect(results[5]).toEqual({ error: 'MCPError', code: -32000, message: 'Connection closed' })
  })
})
