/**
 * A server's request to the client during a Streamable HTTP call (sampling) in record and replay.
 * The server sends `sampling/createMessage` on the call's event stream and waits for the client's
 * answer, which the client POSTs on its own. A replayed stream waits for that POST too: the
 * client's handler runs, its answer is matched against the recorded one, and only then does the
 * recorded rest (the tool's answer) play. An answer unlike the recorded one fails the replay and
 * the call gets an error instead of the recorded answer, in any order mode (with `--order any`
 * and `--allow-unused` such a replay used to pass). The server and the client are the official
 * TypeScript SDK's.
 */
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { CreateMessageRequestSchema, CreateMessageResultSchema, ElicitRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js'
import { describe, expect, it } from 'vitest'
import type { Cassette } from '../../src/cassette/format/cassette.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { ROOT } from '../helpers/cli.js'
import { freePort, waitForPort } from '../helpers/redis-server.js'
import { closing, closingChild, closingServer } from '../helpers/teardown.js'

const EVERYTHING = path.join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js')

/** A stateful SDK server whose `summarize` tool asks the client to sample, and answers with what it got. */
async function startSamplingServer(): Promise<string> {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const server = closingServer(
    createServer((req, res) => {
      const known = sessions.get(String(req.headers['mcp-session-id']))
      if (known) return void known.handleRequest(req, res)
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => void sessions.set(id, transport) })
      const mcp = new McpServer({ name: 'summaries', version: '1.0.0' })
      mcp.registerTool('summarize', { description: 'Summarize the open orders' }, async (extra) => {
        const sampled = await extra.sendRequest({ method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'Summarize 2 orders' } }], maxTokens: 20 } }, CreateMessageResultSchema)
        return { content: [{ type: 'text', text: `summary: ${(sampled.content as { text: string }).text}` }] }
      })
      void mcp.connect(transport).then(() => transport.handleRequest(req, res))
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Connect a client whose sampling handler answers `text`, call `summarize`, and close: the answer (or the error) and the prompts it was asked. */
async function summarize(url: string, text: string): Promise<{ answer: unknown; asked: string[] }> {
  const asked: string[] = []
  const client = new Client({ name: 'agent', version: '1.0.0' }, { capabilities: { sampling: {} } })
  client.setRequestHandler(CreateMessageRequestSchema, (request) => {
    asked.push((request.params.messages[0]?.content as { text: string }).text)
    return { role: 'assistant', content: { type: 'text', text }, model: 'test-model' }
  })
  await client.connect(new StreamableHTTPClientTransport(new URL(url)))
  const answer = await client.callTool({ name: 'summarize', arguments: {} }).catch((error: unknown) => error)
  await client.close()
  return { answer, asked }
}

async function record(): Promise<{ cassette: Cassette; answer: unknown }> {
  const origin = await startSamplingServer()
  const storm = createStorm({})
  const recorder = createCassetteRecorder(storm, { urlForm: 'origin' })
  const proxy = await startProxy({ targets: [origin], storm, observer: recorder.observer })
  const { answer, asked } = await summarize(`${proxy.url}/mcp`, '2 boxes to Lyon')
  expect(asked).toEqual(['Summarize 2 orders'])
  await proxy.close()
  await recorder.close()
  return { cassette: await recorder.cassette(), answer }
}

describe('MCP server requests in record and replay (Streamable HTTP)', () => {
  it('replays a call that asked the client to sample: the client is asked again, its answer POST is replayed before the tool\'s answer, and the replay passes', async () => {
    const recorded = await record()
    expect(recorded.answer).toEqual({ content: [{ type: 'text', text: 'summary: 2 boxes to Lyon' }] })
    expect(recorded.cassette.exchanges.map((exchange) => exchange.route)).toEqual(['initialize', 'notifications/initialized', 'GET /mcp', 'tools/call summarize', 'POST /mcp'])

    const replay = closing(await startReplayServer(recorded.cassette))
    const replayed = await summarize(`${replay.url}/mcp`, '2 boxes to Lyon')
    expect(replayed).toEqual({ answer: recorded.answer, asked: ['Summarize 2 orders'] })
    const verdict = replay.session.verdict()
    expect(verdict.message).toBe('Replayed 5 of 5 exchange(s) from <recording>.')
    expect(verdict.passed).toBe(true)
  })

  it.each([
    ['in recorded order', {}],
    ['in any order, unused exchanges allowed', { order: 'any' as const, allowUnused: true }],
  ])('fails the replay when the client answers the sampling otherwise than when recorded (%s): the call gets an error, not the recorded answer', async (_mode, options) => {
    const recorded = await record()
    const replay = closing(await startReplayServer(recorded.cassette, options))
    const replayed = await summarize(`${replay.url}/mcp`, '3 boxes to Oslo')
    expect(replayed.asked).toEqual(['Summarize 2 orders'])
    expect(replayed.answer).toBeInstanceOf(McpError)
    expect((replayed.answer as McpError).code).toBe(-32603)
    expect((replayed.answer as McpError).message).toMatch(/Failed to replay "POST \/mcp" \(request 5\)/)
    const verdict = replay.session.verdict()
    expect(verdict.passed).toBe(false)
    expect(verdict.code).toBe('ERR_CASSETTE_MISMATCH')
  })

  it('replays the reference server-everything\'s elicitation: the same answer passes, another fails the call and the replay', async () => {
    const port = await freePort()
    closingChild(spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: 'ignore' }))
    await waitForPort(port, Date.now() + 20_000, 'server-everything')
    /** Elicit through `url`, the client answering with `name`. */
    const elicit = async (url: string, name: string) => {
      const client = new Client({ name: 'agent', version: '1.0.0' }, { capabilities: { elicitation: {} } })
      client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { name, check: true } }))
      await client.connect(new StreamableHTTPClientTransport(new URL(url)))
      const answer = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} }).catch((error: unknown) => error)
      await client.close()
      return answer
    }
    const storm = createStorm({})
    const recorder = createCassetteRecorder(storm, { urlForm: 'origin' })
    const proxy = await startProxy({ targets: [`http://127.0.0.1:${port}`], storm, observer: recorder.observer })
    const recorded = await elicit(`${proxy.url}/mcp`, 'Ada')
    await proxy.close()
    await recorder.close()
    expect(JSON.stringify(recorded)).toContain('Ada')
    const cassette = await recorder.cassette()

    const same = closing(await startReplayServer(cassette, { order: 'any', allowUnused: true }))
    expect(await elicit(`${same.url}/mcp`, 'Ada')).toEqual(recorded)
    expect(same.session.verdict().passed).toBe(true)

    const other = closing(await startReplayServer(cassette, { order: 'any', allowUnused: true }))
    const refused = await elicit(`${other.url}/mcp`, 'Grace')
    expect(refused).toBeInstanceOf(McpError)
    expect((refused as McpError).message).toMatch(/"Ada" ≠ "Grace"|no recorded exchange/)
    expect(other.session.verdict().code).toBe('ERR_CASSETTE_MISMATCH')
  })
})
