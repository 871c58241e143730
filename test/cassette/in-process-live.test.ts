/**
 * In-process replay of an agent loop with its tool route live: `replayCassette(…, { live })` and
 * `cassetteHandlers(…, { replayOnly })` answer the model calls from the cassette while the tool
 * server, called for real under the storm's rules, sees exactly the calls it saw when recorded.
 * The model server is down during replay, and its tool answers carry new ids, UUIDs and times
 * every run (the cassette's normalisers keep the conversation matching).
 */
import { randomBytes, randomUUID } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { setupServer } from 'msw/node'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cassetteHandlers } from '../../src/cassette/replay/cassette-handlers.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import type { Cassette } from '../../src/cassette/format/cassette.js'
import { replayCassette } from '../../src/cassette/replay/replay-cassette.js'
import { createStorm } from '../../src/create-storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { startModelUpstream, TOOL_TURNS } from '../helpers/model-upstream.js'
import { agentLoop } from '../helpers/agent-loop.js'

let tool: http.Server
let toolUrl: string
let modelUrl: string
let cassette: Cassette
const toolCalls: string[] = []
let recordedCalls: string[]

/** The agent: model, then each tool call it asks for, until the model answers in text. */
const agent = () => agentLoop(modelUrl, toolUrl, 'Ship 2 boxes to Lyon.')

/** The agent's answer; `release` (the replay's dispose) runs however the agent ends. */
async function agentWhile(release: () => void): Promise<string> {
  try {
    return await agent()
  } finally {
    release()
  }
}

beforeAll(async () => {
  // The tool commits each call and answers with values that are new in every run.
  tool = http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      toolCalls.push(body)
      const text = JSON.stringify({ shipment: randomUUID(), at: new Date().toISOString(), ticket: `resp_${randomBytes(9).toString('hex')}`, boxes: 2 })
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    })
  })
  await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve))
  toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}`
  const model = await startModelUpstream()
  modelUrl = model.url

  const storm = createStorm()
  const recorder = createCassetteRecorder(storm, { match: { normalize: ['ids', 'timestamps', 'uuids'] } })
  const interception = intercept(storm, { observer: recorder.observer, filter: (url) => url.origin === modelUrl || url.origin === toolUrl })
  try {
    expect(await agent()).toBe(`agent: Done after ${TOOL_TURNS} tool calls.`)
  } finally {
    interception.dispose()
  }
  await recorder.close()
  cassette = await recorder.cassette()
  recordedCalls = [...toolCalls]
  expect(recordedCalls).toEqual(['{"turn":1}', '{"turn":2}'])
  expect(cassette.exchanges.map((exchange) => `${exchange.request.method} ${new URL(exchange.request.url, 'http://x').pathname}`)).toEqual([
    'POST /v1/chat/completions',
    'POST /ship',
    'POST /v1/chat/completions',
    'POST /ship',
    'POST /v1/chat/completions',
  ])
  // Replay never reaches the model: it is down from here on.
  await model.close()
})
afterAll(async () => {
  await new Promise((resolve) => tool.close(resolve))
})

describe('in-process replay with live routes', () => {
  it('replayCassette with live on the tool route: the model is replayed, the tool sees exactly the recorded calls, live calls stay outside the verdict', async () => {
    const before = toolCalls.length
    const replay = replayCassette(cassette, { live: ['POST /ship'] })
    const answer = await agentWhile(replay.dispose)
    expect(answer).toBe(`agent: Done after ${TOOL_TURNS} tool calls.`)
    expect(toolCalls.slice(before)).toEqual(recordedCalls)
    expect(replay.verdict()).toMatchObject({ passed: true, served: 3, live: 2, unused: 0 })
    expect(replay.verdict().rows.map((row) => row.result)).toEqual(['ok', 'live (sent to the network)', 'ok', 'live (sent to the network)', 'ok'])
    replay.assertDone()
    expect(replay.report()).toMatchObject({ passed: true, live: 2 })
  })

  it('replayCassette runs the live route under the storm\'s rules: an injected 503 reaches the agent, the tool is not called', async () => {
    const before = toolCalls.length
    const storm = createStorm({ rules: [{ name: 'tool-down', route: 'POST /ship', kind: 'unavailable', calls: [1] }] })
    const replay = replayCassette(cassette, { live: ['POST /ship'], storm })
    try {
      const model = await fetch(`${modelUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'Ship 2 boxes to Lyon.' }], tools: [{ type: 'function', function: { name: 'ship', parameters: { type: 'object' } } }] }) })
      expect(model.status).toBe(200)
      await model.arrayBuffer()
      const first = await fetch(`${toolUrl}/ship`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"turn":1}' })
      expect(first.status).toBe(503)
      await first.arrayBuffer()
      const second = await fetch(`${toolUrl}/ship`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"turn":1}' })
      expect(second.status).toBe(200)
      await second.arrayBuffer()
    } finally {
      replay.dispose()
    }
    expect(toolCalls.slice(before)).toEqual(['{"turn":1}'])
    expect(storm.report().calls.map((call) => [call.route, call.status])).toEqual([
      ['POST /v1/chat/completions', 200],
      ['POST /ship', 503],
      ['POST /ship', 200],
    ])
  })

  it('cassetteHandlers with replayOnly the model route: MSW answers the model from the cassette, the tool is called for real', async () => {
    const before = toolCalls.length
    const replay = cassetteHandlers(cassette, { replayOnly: ['POST /v1/chat/*'] })
    const server = setupServer(...replay.handlers)
    server.listen({ onUnhandledRequest: 'error' })
    const answer = await agentWhile(() => server.close())
    expect(answer).toBe(`agent: Done after ${TOOL_TURNS} tool calls.`)
    expect(toolCalls.slice(before)).toEqual(recordedCalls)
    expect(replay.verdict()).toMatchObject({ passed: true, served: 3, live: 2, unused: 0 })
    replay.assertDone()
  })

  it('fails, naming the tool result, when the cassette\'s normalisers are turned off (match.normalize: [])', async () => {
    const replay = replayCassette(cassette, { live: ['POST /ship'], match: { normalize: [] } })
    const answer = await agentWhile(replay.dispose)
    expect(answer).toContain('model answered 422')
    expect(replay.verdict()).toMatchObject({ passed: false, code: 'ERR_CASSETTE_MISMATCH' })
    expect(replay.verdict().message).toContain('body differs at $.messages[2].content')
  })
})

describe('normalisers inside an MCP tools/call', () => {
  it('replay matches a tools/call whose arguments carry a new UUID and time only with the normalisers, and names a changed argument by its path', async () => {
    const server = http.createServer((req, res) => {
      let body = ''
      req.on('data', (chunk: Buffer) => (body += chunk.toString()))
      req.on('end', () => {
        const { id } = JSON.parse(body) as { id: number }
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'shipped' }] } }))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`
    let id = 0
    const call = (boxes: number) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: 'ship', arguments: { request: randomUUID(), at: new Date(Date.now() + id * 1000).toISOString(), boxes } } }) }).then(async (response) => [response.status, await response.text()] as const)
    const storm = createStorm()
    const recorder = createCassetteRecorder(storm, { match: { normalize: ['timestamps', 'uuids'] } })
    const interception = intercept(storm, { observer: recorder.observer, filter: (target) => target.href === url })
    try {
      expect((await call(2))[0]).toBe(200)
    } finally {
      interception.dispose()
    }
    await recorder.close()
    await new Promise((resolve) => server.close(resolve))
    const recorded = await recorder.cassette()

    const replay = replayCassette(recorded)
    try {
      const [status, text] = await call(2)
      expect(status).toBe(200)
      expect(JSON.parse(text)).toMatchObject({ jsonrpc: '2.0', id, result: { content: [{ text: 'shipped' }] } })
    } finally {
      replay.dispose()
    }
    replay.assertDone()

    const changed = replayCassette(recorded)
    try {
      const [status, text] = await call(3)
      expect(status).toBe(422)
      expect(text).toContain('$.params.arguments.boxes')
    } finally {
      changed.dispose()
    }
    expect(changed.verdict().rows[0]?.diff?.paths).toEqual([{ path: '$.params.arguments.boxes', expected: '2', seen: '3' }])

    // Without the normalisers the new UUID and time are what differs.
    const exact = replayCassette(recorded, { match: { normalize: [] } })
    try {
      expect((await call(2))[0]).toBe(422)
    } finally {
      exact.dispose()
    }
    expect(exact.verdict().rows[0]?.diff?.paths.map((path) => path.path)).toEqual(['$.params.arguments.request', '$.params.arguments.at'])
  })
})
