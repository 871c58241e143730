/**
 * A stdio MCP server's requests to the client during a call (sampling, elicitation), in record and
 * replay: `toolstorm mcp --record` keeps each one with the client's answer on the call's line
 * (redacted), and `toolstorm mcp --replay` (no server) sends it to the client again and waits for
 * its answer before the call's recorded answer, as the server waited. A client that answers
 * otherwise than when recorded gets an error for the call instead of the recorded answer, and the
 * replay fails (exit 1). The server is the reference `@modelcontextprotocol/server-everything`
 * (`trigger-sampling-request`, `trigger-elicitation-request`), the client the official SDK's.
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { CreateMessageRequestSchema, ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { ROOT } from '../helpers/cli.js'
import { fakeSecrets, leaks } from '../helpers/fake-secrets.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { connectSdk, rawServer, statusTo, wrappedCommand } from '../helpers/stdio-mcp.js'

const EVERYTHING_SERVER = [path.join(ROOT, 'node_modules/.bin/mcp-server-everything'), 'stdio']

/** What the client's handlers were asked, and a client that answers sampling with `text` and elicitation with `name`. */
function answering(text: string, name: string, asked: Array<{ method: string; params: unknown }>) {
  return (client: Client) => {
    client.registerCapabilities({ sampling: {}, elicitation: {} })
    client.setRequestHandler(CreateMessageRequestSchema, (request) => {
      asked.push({ method: request.method, params: request.params })
      return { role: 'assistant', content: { type: 'text', text }, model: 'test-model', stopReason: 'endTurn' }
    })
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push({ method: request.method, params: request.params })
      return { action: 'accept', content: { name, check: true } }
    })
  }
}

/** The two calls that make the server ask the client, and what they answered. */
async function session(client: Client): Promise<unknown[]> {
  await client.listTools()
  const sampled = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'ship 2 boxes', maxTokens: 20 } }).catch((error: unknown) => error)
  const elicited = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }).catch((error: unknown) => error)
  return [sampled, elicited]
}

/** A session recorded with a client that answers sampling with "two boxes" and elicitation with Ada: its cassette and answers. */
async function recordedSession(): Promise<{ folder: string; cassette: string; answers: unknown[] }> {
  const folder = await temporaryFolder('toolstorm-stdio-')
  const cassette = path.join(folder, 'session.cassette.jsonl')
  const recording = await connectSdk(wrappedCommand(EVERYTHING_SERVER, ['--record', cassette]), {}, answering('two boxes', 'Ada', []))
  const answers = await session(recording.client)
  await recording.close()
  return { folder, cassette, answers }
}

describe('toolstorm mcp: server requests in record and replay', () => {
  it('records sampling and elicitation with the client\'s redacted answers, and replays them to the client before each call\'s answer, with no server', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const cassette = path.join(folder, 'session.cassette.jsonl')
    const secret = fakeSecrets().github
    const asked: Array<{ method: string; params: unknown }> = []
    const recording = await connectSdk(wrappedCommand(EVERYTHING_SERVER, ['--record', cassette]), {}, answering(`two boxes, key ${secret}`, 'Ada', asked))
    const recorded = await session(recording.client)
    await recording.close()
    expect(asked.map(({ method }) => method)).toEqual(['sampling/createMessage', 'elicitation/create'])
    expect(JSON.stringify(recorded[1])).toContain('Ada')

    const text = await readFile(cassette, 'utf8')
    expect(leaks(text, { secret })).toEqual([])
    const stored = (await Cassette.load(cassette)).exchanges
    const messages = (route: string) => stored.find((exchange) => exchange.route === route)?.notifications?.map(({ message, answer }) => ({ method: (message as { method: string }).method, answer: answer?.message }))
    expect(messages('tools/call trigger-sampling-request')).toEqual([
      { method: 'sampling/createMessage', answer: expect.objectContaining({ result: expect.objectContaining({ content: { type: 'text', text: 'two boxes, key [REDACTED]' } }) }) },
    ])
    expect(messages('tools/call trigger-elicitation-request')).toEqual([{ method: 'elicitation/create', answer: expect.objectContaining({ result: { action: 'accept', content: { name: 'Ada', check: true } } }) }])

    const status = path.join(folder, 'status')
    const replayedAsks: Array<{ method: string; params: unknown }> = []
    const replaying = await connectSdk(statusTo(status, wrappedCommand([], ['--replay', cassette])), {}, answering(`two boxes, key ${secret}`, 'Ada', replayedAsks))
    // The answers as recorded: the one that quoted the client's secret carries it redacted, as every stored body does.
    expect(await session(replaying.client)).toEqual(JSON.parse(JSON.stringify(recorded).replace(secret, '[REDACTED]')))
    await replaying.close()
    // The client was asked again, what the server asked it: its handlers ran.
    expect(replayedAsks).toEqual(asked)
    expect(replaying.stderr()).toContain(`Replayed 4 of 4 exchange(s) from ${cassette}.`)
    expect((await readFile(status, 'utf8')).trim()).toBe('0')
  })

  it('fails the replay when the client answers a replayed request otherwise than when recorded: the call gets an error naming what differs, not the recorded answer', async () => {
    const { folder, cassette, answers: recorded } = await recordedSession()
    const status = path.join(folder, 'status')
    const replaying = await connectSdk(statusTo(status, wrappedCommand([], ['--replay', cassette])), {}, answering('two boxes', 'Grace', []))
    const [sampled, elicited] = await session(replaying.client)
    expect(sampled).toEqual(recorded[0])
    expect(elicited).toBeInstanceOf(McpError)
    expect((elicited as McpError).message).toMatch(/the client answered the server's elicitation\/create otherwise than when recorded \(\$\.result\.content\.name: "Ada" ≠ "Grace"\)/)
    expect((elicited as McpError).message).toMatch(/toolstorm: HTTP 422/)
    await replaying.close()
    expect(replaying.stderr()).toContain('(ERR_CASSETTE_MISMATCH)')
    expect((await readFile(status, 'utf8')).trim()).toBe('1')
  })

  it('replays a client\'s differing answer when the field is ignored (--ignore-body-field)', async () => {
    const { cassette, answers: recorded } = await recordedSession()
    const replaying = await connectSdk(wrappedCommand([], ['--replay', cassette, '--ignore-body-field', 'name']), {}, answering('two boxes', 'Grace', []))
    expect(await session(replaying.client)).toEqual(recorded)
    await replaying.close()
    expect(replaying.stderr()).toContain(`Replayed 4 of 4 exchange(s) from ${cassette}.`)
  })

  it.each([
    ['fails the replay', [], 1],
    ['passes with --allow-unused', ['--allow-unused'], 0],
  ])('a client that cancels the call instead of answering the replayed sampling request %s (it answered when recorded)', async (_outcome, options, code) => {
    const { cassette } = await recordedSession()
    // A raw client: its initialize differs from the SDK's in what these fields hold, and it makes one call of the two.
    const ignored = ['clientInfo', 'capabilities', 'protocolVersion'].flatMap((field) => ['--ignore-body-field', field])
    const client = rawServer(wrappedCommand([], ['--replay', cassette, '--order', 'any', ...ignored, ...options]))
    client.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { sampling: {} }, clientInfo: { name: 'raw', version: '1' } } })
    expect(JSON.parse((await client.lines(1))[0]!)).toMatchObject({ id: 1, result: { serverInfo: { name: 'mcp-servers/everything' } } })
    client.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'trigger-sampling-request', arguments: { prompt: 'ship 2 boxes', maxTokens: 20 } } })
    let asked: { method?: string } = {}
    while (asked.method !== 'sampling/createMessage') asked = JSON.parse((await client.lines(1))[0]!) as { method?: string }
    client.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } })
    const ended = await client.end()
    expect(ended.code).toBe(code)
    if (code === 1) expect(client.stderr()).toContain("the client never answered the server's sampling/createMessage, though it did when recorded")
    else expect(client.stderr()).not.toContain('never answered')
  })
})
