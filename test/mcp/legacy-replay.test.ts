/**
 * A legacy HTTP+SSE MCP session (2024-11-05) records and replays with no server behind: the
 * answers recorded on the GET stream are played when their POST is replayed, with the live ids.
 */
import { describe, expect, it } from 'vitest'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { recordMcpSession } from '../helpers/mcp-recording.js'
import { connectLegacyMcpClient } from '../helpers/mcp-server.js'
import { closing } from '../helpers/teardown.js'

const recordLegacySession = () => recordMcpSession({ stateful: true, json: false, legacy: true }, (url) => connectLegacyMcpClient(url))

describe('legacy MCP record and replay', () => {
  for (const speed of ['instant', 'recorded'] as const) {
    it(`replays a recorded legacy session to the SDK client with no server behind, its ids differing from the recording (${speed})`, async () => {
      const recorded = await recordLegacySession()
      const replay = closing(await startReplayServer(recorded.cassette, { order: 'any', allowUnused: true, speed }))
      const { client } = await connectLegacyMcpClient(`${replay.url}/sse`)
      // One tools/list fewer than recorded: the tool call goes out with an id one less than recorded,
      // and the second tools/list's answer, never asked for, is never played.
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(recorded.tools)
      expect(await client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-1' } })).toEqual(recorded.created)
      await client.close()
      expect(replay.verdict().rows.map((row) => row.result)).not.toContain('extra')
    }, 10_000)
  }

  it('refuses a tool call whose arguments differ from the recording: the POST gets 422 and the call rejects', async () => {
    const recorded = await recordLegacySession()
    const replay = closing(await startReplayServer(recorded.cassette, { order: 'any', allowUnused: true }))
    const { client } = await connectLegacyMcpClient(`${replay.url}/sse`)
    await expect(client.callTool({ name: 'create_shipment', arguments: { order_id: 'o-2' } })).rejects.toThrow(/422/)
    await client.close()
    expect(replay.verdict().passed).toBe(false)
  }, 10_000)
})
