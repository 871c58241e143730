/**
 * `toolstorm mcp --record FILE` writes an ordinary cassette of a stdio session (its exchanges
 * keyed by method and tool); `toolstorm mcp --replay FILE` answers the SDK client from it with no
 * server, strict as every replay (an extra call fails it), with the live request ids;
 * `--live 'tools/call read_graph'` sends those calls to a real server.
 */
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { connectSdk, MEMORY_SERVER, rawServer, readJson, statusTo, wrappedCommand } from '../helpers/stdio-mcp.js'

const ADA = { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] }

/** The SDK client's session: what each step answered. */
async function session(client: Client, extra = false) {
  const answers: unknown[] = [client.getServerVersion(), (await client.listTools()).tools.map((tool) => tool.name)]
  answers.push(await client.callTool({ name: 'create_entities', arguments: ADA }))
  answers.push(await client.callTool({ name: 'read_graph', arguments: {} }))
  if (extra) answers.push(await client.callTool({ name: 'read_graph', arguments: {} }).catch((error: unknown) => error))
  return answers
}

describe('toolstorm mcp: record and replay', () => {
  it('replays a recorded session with no server: the same answers, the live ids; an extra call fails the replay (exit 1)', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const cassette = path.join(folder, 'session.cassette.jsonl')
    const recording = await connectSdk(wrappedCommand(MEMORY_SERVER, ['--record', cassette]), { MEMORY_FILE_PATH: path.join(folder, 'memory.jsonl') })
    const recorded = await session(recording.client)
    await recording.close()

    const stored = await Cassette.load(cassette)
    expect(stored.exchanges.map((exchange) => exchange.route)).toEqual(['initialize', 'tools/list', 'tools/call create_entities', 'tools/call read_graph'])
    expect(stored.exchanges.map((exchange) => exchange.request.url)).toEqual(['/mcp', '/mcp', '/mcp', '/mcp'])

    const ready = path.join(folder, 'ready.json')
    const status = path.join(folder, 'status')
    const replaying = await connectSdk(statusTo(status, wrappedCommand([], ['--replay', cassette, '--ready-file', ready])))
    expect((await readJson<{ server: unknown }>(ready)).server).toBeNull()
    expect(await session(replaying.client)).toEqual(recorded)
    await replaying.close()
    expect(replaying.stderr()).toContain(`Replayed 4 of 4 exchange(s) from ${cassette}.`)
    expect((await readFile(status, 'utf8')).trim()).toBe('0')

    const extra = await connectSdk(statusTo(status, wrappedCommand([], ['--replay', cassette])))
    const answers = await session(extra.client, true)
    expect(answers.slice(0, 4)).toEqual(recorded)
    const refused = answers[4] as McpError
    expect(refused).toBeInstanceOf(McpError)
    expect(refused.code).toBe(-32603)
    expect(refused.message).toMatch(/toolstorm: HTTP 422/)
    await extra.close()
    expect(extra.stderr()).toContain('(ERR_CASSETTE_EXTRA)')
    expect((await readFile(status, 'utf8')).trim()).toBe('1')
  })

  it('answers a replayed call with the live request\'s id when the client numbers its requests otherwise than the recorded one did (numbers recorded, strings and other numbers live)', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const cassette = path.join(folder, 'session.cassette.jsonl')
    const initialize = (id: unknown) => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } })
    const messages = (ids: unknown[]) => [
      initialize(ids[0]),
      { jsonrpc: '2.0', id: ids[1], method: 'tools/call', params: { name: 'create_entities', arguments: ADA } },
      { jsonrpc: '2.0', id: ids[2], method: 'tools/call', params: { name: 'read_graph', arguments: {} } },
    ]
    /** Each answer line, in order, after the notification that follows initialize. */
    const converse = async (command: string[], ids: unknown[], env: Record<string, string> = {}) => {
      const server = rawServer(command, env)
      const answers: Array<{ id: unknown; result?: unknown }> = []
      for (const [index, message] of messages(ids).entries()) {
        server.send(message)
        answers.push(JSON.parse((await server.lines(1))[0]!) as { id: unknown; result?: unknown })
        if (index === 0) server.send({ jsonrpc: '2.0', method: 'notifications/initialized' })
      }
      expect((await server.end()).code).toBe(0)
      return { answers, stderr: server.stderr() }
    }
    const recorded = await converse(wrappedCommand(MEMORY_SERVER, ['--record', cassette]), [0, 1, 2], { MEMORY_FILE_PATH: path.join(folder, 'memory.jsonl') })
    expect(recorded.answers.map((answer) => answer.id)).toEqual([0, 1, 2])

    const replayed = await converse(wrappedCommand([], ['--replay', cassette]), ['init-7', 41, 'graph:"x"'])
    expect(replayed.answers.map((answer) => answer.id)).toEqual(['init-7', 41, 'graph:"x"'])
    expect(replayed.answers.map((answer) => answer.result)).toEqual(recorded.answers.map((answer) => answer.result))
    expect(replayed.stderr).toContain(`Replayed 3 of 3 exchange(s) from ${cassette}.`)
  })

  it('--live sends the calls it names to the server after --, and replays the rest', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const cassette = path.join(folder, 'session.cassette.jsonl')
    const recording = await connectSdk(wrappedCommand(MEMORY_SERVER, ['--record', cassette]), { MEMORY_FILE_PATH: path.join(folder, 'recorded.jsonl') })
    const recorded = await session(recording.client)
    await recording.close()

    // The live server has another graph: read_graph answers from it; create_entities is replayed and never reaches it.
    const live = path.join(folder, 'live.jsonl')
    await writeFile(live, JSON.stringify({ type: 'entity', name: 'Grace', entityType: 'person', observations: ['live'] }) + '\n')
    const replaying = await connectSdk(wrappedCommand(MEMORY_SERVER, ['--replay', cassette, '--live', 'tools/call read_graph']), { MEMORY_FILE_PATH: live })
    const answers = await session(replaying.client)
    await replaying.close()
    expect(answers.slice(0, 3)).toEqual(recorded.slice(0, 3))
    expect((answers[3] as { structuredContent: unknown }).structuredContent).toEqual({ entities: [{ name: 'Grace', entityType: 'person', observations: ['live'] }], relations: [] })
    expect(await readFile(live, 'utf8')).not.toContain('Ada')
    expect(replaying.stderr()).toContain(`Replayed 3 of 4 exchange(s) from ${cassette}, 1 live.`)
  })
})
