/**
 * `stream_cut` on a Streamable HTTP server that keeps its events (an SDK `EventStore`, #37 item 4):
 * the SDK client survives the cut. Every event carries an id; when the POST's stream breaks off,
 * the client reconnects with `GET` and `Last-Event-ID`, and the server replays the events after
 * it, the call's answer among them. The same session recorded and replayed: the replayed POST
 * breaks off where it did, the client sends the recorded event id, and the recorded `GET` answers it.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js'
import type { Progress } from '@modelcontextprotocol/sdk/types.js'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { connectMcpClient } from '../helpers/mcp-server.js'
import { closing, closingServer } from '../helpers/teardown.js'

const CUT = { rules: [{ name: 'cut-sync', route: 'tools/call slow_sync', kind: 'stream_cut' as const, after: 2 }] }

/**
 * A stateful SDK server that keeps its events; `slow_sync` reports three steps 50 ms apart, then
 * answers. It offers no standalone stream (a `GET` without `Last-Event-ID` is answered 405, as the
 * spec allows): the stream the client would hold open until it closes is recorded as an upstream
 * error, and replays as a reset the client reconnects after (a request the cassette lacks).
 */
async function startResumableServer(): Promise<{ origin: string; requests: IncomingHttpHeaders[] }> {
  const requests: IncomingHttpHeaders[] = []
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const server = closingServer(
    createServer((req, res) => {
      requests.push({ ...req.headers, ':method': req.method })
      if (req.method === 'GET' && req.headers['last-event-id'] === undefined) return void res.writeHead(405, { allow: 'POST, DELETE' }).end()
      const id = req.headers['mcp-session-id']
      let transport = typeof id === 'string' ? sessions.get(id) : undefined
      if (!transport) {
        const created = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), eventStore: new InMemoryEventStore(), onsessioninitialized: (sessionId) => void sessions.set(sessionId, created) })
        const mcp = new McpServer({ name: 'orders', version: '1.0.0' })
        mcp.registerTool('slow_sync', { description: 'Sync slowly', inputSchema: { count: z.number() } }, async ({ count }, extra) => {
          for (let step = 1; step <= count; step++) {
            await new Promise((resolve) => setTimeout(resolve, 50))
            const token = extra._meta?.progressToken
            if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: step, total: count } })
          }
          return { content: [{ type: 'text', text: `synced ${count}` }] }
        })
        void mcp.connect(created)
        transport = created
      }
      void transport.handleRequest(req, res)
    }),
  )
  server.on('close', () => sessions.forEach((transport) => void transport.close()))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests }
}

async function syncThrough(url: string): Promise<{ result: unknown; progress: Progress[] }> {
  const { client } = await connectMcpClient(url)
  const progress: Progress[] = []
  const result = await client.callTool({ name: 'slow_sync', arguments: { count: 3 } }, undefined, { onprogress: (update) => progress.push(update) })
  await client.close()
  return { result, progress }
}

describe('stream_cut on a server that keeps its events', () => {
  it('is survived by the SDK client, which resumes with Last-Event-ID and gets the answer', async () => {
    const server = await startResumableServer()
    const proxy = closing(await startProxy({ targets: [server.origin], config: CUT }))
    const { result } = await syncThrough(`${proxy.url}/mcp`)
    expect(result).toEqual({ content: [{ type: 'text', text: 'synced 3' }] })
    expect(proxy.storm.report().coverage['cut-sync']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
    expect(server.requests.filter((headers) => headers[':method'] === 'GET' && headers['last-event-id'] !== undefined)).toHaveLength(1)
  }, 30_000)

  it('replays the resumption: the POST breaks off where it did, and the recorded GET after Last-Event-ID answers', async () => {
    const server = await startResumableServer()
    const storm = createStorm(CUT)
    const recorder = createCassetteRecorder(storm, { urlForm: 'origin', match: { headers: ['last-event-id'] } })
    const proxy = await startProxy({ targets: [server.origin], storm, observer: recorder.observer })
    const live = await syncThrough(`${proxy.url}/mcp`)
    await proxy.close()
    await recorder.close()
    const cassette = await recorder.cassette()
    const replay = closing(await startReplayServer(cassette, { order: 'any' }))
    const replayed = await syncThrough(`${replay.url}/mcp`)
    expect(replayed.result).toEqual(live.result)
    expect(replayed.progress).toEqual(live.progress)
    const verdict = replay.verdict()
    expect(verdict.passed, verdict.message).toBe(true)
  }, 30_000)
})
