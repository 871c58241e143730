/**
 * MCP sessions record and replay with no server behind (issue #17, item 5): the replay is the proxy
 * with a cassette source, matching ignores JSON-RPC ids (clients number their requests), and a
 * replayed answer carries the live request's id, in a JSON body and in an event stream.
 */
import { describe, expect, it } from 'vitest'
import type { Cassette } from '../../src/cassette/format/cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { storedBodyBytes } from '../../src/cassette/format/store-body.js'
import { recordMcpSession } from '../helpers/mcp-recording.js'
import { connectMcpClient } from '../helpers/mcp-server.js'
import { closing } from '../helpers/teardown.js'

/** A session through a recording proxy: connect, list the tools twice, create a shipment. */
const recordSession = (json: boolean) => recordMcpSession({ stateful: false, json }, (url) => connectMcpClient(url))

/** The recorded request body of the first exchange whose JSON-RPC method is `method`. */
function recordedRequest(cassette: Cassette, method: string): Record<string, unknown> {
  for (const exchange of cassette.exchanges) {
    if (exchange.request.body === null) continue
    const message = JSON.parse(storedBodyBytes(exchange.request.body).toString('utf8')) as Record<string, unknown>
    if (message.method === method) return message
  }
  throw new Error(`no ${method} in the cassette`)
}

for (const json of [true, false]) {
  describe(`MCP record and replay (${json ? 'JSON' : 'event-stream'} answers)`, () => {
    it('replays a recorded session to the SDK client with no server behind, though its request ids differ from the recording', async () => {
      const recorded = await recordSession(json)
      const replay = closing(await startReplayServer(recorded.cassette, { order: 'any', allowUnused: true }))
      // One tools/list fewer than recorded: the tool call goes out with the id one less than recorded.
      const { client } = await connectMcpClient(`${replay.url}/mcp`)
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(recorded.tools)
      expect(await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })).toEqual(recorded.created)
      await client.close()
      const verdict = replay.verdict()
      expect(verdict.passed).toBe(true)
      expect(verdict.rows.map((row) => row.result)).not.toContain('extra')
    })

    it('names each MCP exchange in the cassette: method, tool, id and the answer the client got', async () => {
      const { cassette } = await recordSession(json)
      const call = cassette.exchanges.find((exchange) => exchange.route === 'tools/call create_shipment')
      expect(call?.mcp).toMatchObject({ method: 'tools/call', tool: 'create_shipment', arguments: { order_id: 'o-1' }, outcome: 'result', errorCode: null })
      expect(typeof call?.mcp?.id).toBe('number')
      expect(cassette.exchanges.filter((exchange) => exchange.mcp).map((exchange) => exchange.mcp?.method)).toEqual(['initialize', 'notifications/initialized', 'tools/list', 'tools/list', 'tools/call'])
    })

    it('answers with the live request\'s JSON-RPC id, whatever id was recorded', async () => {
      const recorded = await recordSession(json)
      const replay = closing(await startReplayServer(recorded.cassette, { order: 'any', allowUnused: true }))
      const call = recordedRequest(recorded.cassette, 'tools/call')
      expect(call.id).not.toBe(77)
      const response = await fetch(`${replay.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ ...call, id: 77 }),
      })
      expect(response.status).toBe(200)
      const text = await response.text()
      const data = json ? text : (/^data: (.*)$/m.exec(text)?.[1] ?? '')
      const answer = JSON.parse(data) as { id: unknown; result: unknown }
      expect(answer.id).toBe(77)
      expect(answer.result).toEqual(recorded.created)
      expect(replay.verdict().passed).toBe(true)
    })

    it('still refuses a tool call whose arguments differ from the recording', async () => {
      const recorded = await recordSession(json)
      const replay = closing(await startReplayServer(recorded.cassette, { order: 'any', allowUnused: true }))
      const call = recordedRequest(recorded.cassette, 'tools/call')
      const response = await fetch(`${replay.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ ...call, params: { name: 'create_shipment', arguments: { order_id: 'o-2' } } }),
      })
      expect(response.status).toBe(422)
      expect(replay.verdict().passed).toBe(false)
      // The table's seen column names the tool, as the expected column does (#30), not just POST /mcp.
      const row = replay.verdict().rows.find((r) => r.result.startsWith('mismatch'))
      expect(row?.seen).toBe('tools/call create_shipment · POST /mcp')
    })
  })
}
