/**
 * A client that closes right after its stream's final event reached it got a complete response
 * (issue #22, item 4): `[DONE]`, `message_stop`, `response.completed`, or an MCP answer to the
 * request's id. The openai SDK and the MCP clients close then, and a real server ends its stream
 * a moment later: whichever came first at the proxy decided between "response" and "cancelled".
 * Here the upstream holds every stream open after its final event, so the client always leaves
 * first, deterministically.
 */
import { execFile } from 'node:child_process'
import http from 'node:http'
import net from 'node:net'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import type { CallRecord } from '../../src/engine/schema/report.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { connectMcpClient } from '../helpers/mcp-server.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { closing } from '../helpers/teardown.js'

const run = promisify(execFile)

/** Streams as providers send them: a first event, the final one, and then (here) no end. */
const STREAMS: Record<string, { path: string; events: string[] }> = {
  'OpenAI chat completions ([DONE])': {
    path: '/v1/chat/completions',
    events: ['data: {"id":"c1","object":"chat.completion.chunk","created":0,"model":"gpt-test","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}\n\n', 'data: {"id":"c1","object":"chat.completion.chunk","created":0,"model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n', 'data: [DONE]\n\n'],
  },
  'Anthropic messages (message_stop)': {
    path: '/v1/messages',
    events: ['event: message_start\ndata: {"type":"message_start","message":{"id":"m1","model":"claude-test","usage":{"input_tokens":3,"output_tokens":0}}}\n\n', 'event: message_stop\ndata: {"type":"message_stop"}\n\n'],
  },
  'OpenAI Responses (response.completed)': {
    path: '/v1/responses',
    events: ['event: response.created\ndata: {"type":"response.created","response":{"id":"r1","status":"in_progress"}}\n\n', 'event: response.completed\ndata: {"type":"response.completed","response":{"id":"r1","status":"completed","model":"gpt-test"}}\n\n'],
  },
  'an event stream no observer reads ([DONE], the fast path)': {
    path: '/feed',
    events: ['data: {"n":1}\n\n', 'data: [DONE]\n\n'],
  },
}

interface HoldingUpstream {
  readonly url: string
  close(): Promise<void>
}

/**
 * A server that answers with an event stream and never ends it: model streams by path, and a
 * minimal streamable-HTTP MCP server at `/mcp` whose `tools/call` answer comes as an event that
 * the stream outlives.
 */
async function startHoldingUpstream(): Promise<HoldingUpstream> {
  const server = http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://upstream')
      if (url.pathname === '/mcp') return answerMcp(req, res, body)
      const stream = Object.values(STREAMS).find((candidate) => candidate.path === url.pathname)
      if (!stream) return res.writeHead(404).end()
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
      // `?partial`: the stream stops before its final event.
      for (const event of url.searchParams.has('partial') ? stream.events.slice(0, -1) : stream.events) res.write(event)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

function answerMcp(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
  if (req.method !== 'POST') return void res.writeHead(405, { allow: 'POST' }).end()
  const message = JSON.parse(body) as { id?: number | string; method: string; params?: { protocolVersion?: string } }
  if (message.id === undefined) return void res.writeHead(202).end()
  const json = (result: unknown) => JSON.stringify({ jsonrpc: '2.0', id: message.id, result })
  const headers = { 'mcp-session-id': 'session-1' }
  if (message.method === 'initialize') {
    res.writeHead(200, { ...headers, 'content-type': 'application/json' })
    return void res.end(json({ protocolVersion: message.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'holding', version: '1.0.0' } }))
  }
  res.writeHead(200, { ...headers, 'content-type': 'text/event-stream' })
  if (message.method === 'tools/list') return void res.write(`event: message\ndata: ${json({ tools: [{ name: 'create_shipment', inputSchema: { type: 'object' } }] })}\n\n`)
  res.write(`event: message\ndata: ${json({ content: [{ type: 'text', text: 'shp_1' }] })}\n\n`)
}

/** POST to `path` through `server` and close the connection once `until` is in what arrived. */
function readThenClose(server: string, path: string, until: string): Promise<string> {
  const { hostname, port } = new URL(server)
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\ncontent-type: application/json\r\ncontent-length: 36\r\n\r\n{"model":"gpt-test","stream": true }`))
    let text = ''
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString()
      if (text.includes(until)) {
        socket.destroy()
        resolve(text)
      }
    })
    socket.on('error', reject)
  })
}

/** Wait until the proxy recorded how every call ended. */
async function settled(server: ProxyServer, count: number): Promise<CallRecord[]> {
  for (let i = 0; i < 200; i++) {
    const calls = server.storm.report().calls
    if (calls.length >= count && calls.every((call) => call.outcome !== 'running')) return calls
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error(`calls still running: ${JSON.stringify(server.storm.report().calls.map((call) => call.outcome))}`)
}

describe('a client that closes right after its stream\'s final event', () => {
  it.each(Object.entries(STREAMS))('is recorded as a complete response: %s', async (_name, stream) => {
    const upstream = closing(await startHoldingUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.url] }))
    const final = stream.events.at(-1) as string
    await readThenClose(proxy.url, stream.path, final.slice(final.indexOf('data: ')).trim())
    // A client that leaves before the final event is still a cancelled call.
    await readThenClose(proxy.url, `${stream.path}?partial`, (stream.events[0] as string).trim())
    const [complete, cancelled] = await settled(proxy, 2)
    expect([complete?.outcome, complete?.status, complete?.error]).toEqual(['response', 200, null])
    expect([cancelled?.outcome, cancelled?.error]).toEqual(['cancelled', 'CLIENT_ABORTED'])
  })

  it('is recorded complete in the cassette, which then replays to a client that closes the same way', async () => {
    const upstream = closing(await startHoldingUpstream())
    const stream = STREAMS['OpenAI chat completions ([DONE])'] as { path: string; events: string[] }
    const storm = createStorm({})
    const recorder = createCassetteRecorder(storm, { urlForm: 'origin' })
    const proxy = closing(await startProxy({ targets: [upstream.url], storm, observer: recorder.observer }))
    await readThenClose(proxy.url, stream.path, 'data: [DONE]')
    await settled(proxy, 1)
    await proxy.close()
    const cassette = await recorder.cassette()
    expect(cassette.exchanges.map((exchange) => [exchange.outcome, exchange.error])).toEqual([['response', null]])
    const replay = await startReplayServer(cassette, { speed: 'recorded' })
    try {
      await readThenClose(replay.url, stream.path, 'data: [DONE]')
      expect((await settled(replay.proxy, 1)).map((call) => [call.outcome, call.error])).toEqual([['response', null]])
    } finally {
      await replay.close()
    }
  })

  it.skipIf(!hasPythonModules('openai'))('the openai Python SDK: a streamed completion it read to [DONE] is complete', async () => {
    const upstream = closing(await startHoldingUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.url] }))
    const script = [
      'import sys, openai',
      'client = openai.OpenAI(api_key="sk-test-not-a-real-key", base_url=sys.argv[1] + "/v1", max_retries=0, timeout=20)',
      'stream = client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}], stream=True)',
      'print("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices))',
    ].join('\n')
    const { stdout } = await run(PYTHON, ['-c', script, proxy.url], { env: { ...process.env, HTTP_PROXY: '', http_proxy: '' }, timeout: 60_000 })
    expect(stdout.trim()).toBe('hi')
    const [call] = await settled(proxy, 1)
    expect([call?.outcome, call?.status, call?.error, call?.model?.streamed]).toEqual(['response', 200, null, true])
  })

  it('the MCP TypeScript SDK: a tool call answered on an event stream, then the client closed, is complete', async () => {
    const upstream = closing(await startHoldingUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.url] }))
    const { client } = await connectMcpClient(`${proxy.url}/mcp`)
    const result = await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })
    expect(JSON.stringify(result.content)).toContain('shp_1')
    await client.close()
    const calls = await settled(proxy, 3)
    const toolCall = calls.find((call) => call.route === 'tools/call create_shipment')
    expect([toolCall?.outcome, toolCall?.error, toolCall?.mcp?.outcome]).toEqual(['response', null, 'result'])
  })

  it.skipIf(!hasPythonModules('mcp'))('the MCP Python SDK: a tool call it read its answer of, then closed, is complete', async () => {
    const upstream = closing(await startHoldingUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.url] }))
    const script = [
      'import asyncio, sys',
      'from mcp import ClientSession',
      'from mcp.client.streamable_http import streamable_http_client',
      'async def main():',
      '    async with streamable_http_client(sys.argv[1]) as (read, write):',
      '        async with ClientSession(read, write) as session:',
      '            await session.initialize()',
      '            result = await session.call_tool("create_shipment", {"order_id": "o-1"})',
      '            print(result.content[0].text)',
      'asyncio.run(main())',
    ].join('\n')
    const { stdout } = await run(PYTHON, ['-c', script, `${proxy.url}/mcp`], { env: { ...process.env, HTTP_PROXY: '', http_proxy: '' }, timeout: 60_000 })
    expect(stdout.trim()).toBe('shp_1')
    const calls = await settled(proxy, 3)
    const toolCall = calls.find((call) => call.route === 'tools/call create_shipment')
    expect([toolCall?.outcome, toolCall?.error, toolCall?.mcp?.outcome]).toEqual(['response', null, 'result'])
  })
})
