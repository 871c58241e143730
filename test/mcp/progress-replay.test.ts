/**
 * MCP progress through record and replay (#37, item 2): the SDK client picks a `progressToken` per
 * call (its request id) and drops every `notifications/progress` that names another. The token is
 * a protocol field, not a secret: it is recorded as sent, matching ignores its value (as it ignores
 * the id), and the replayed notifications carry the live call's token, also where the recording
 * had to redact it.
 */
import type http from 'node:http'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Progress } from '@modelcontextprotocol/sdk/types.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { storedBodyBytes } from '../../src/cassette/format/store-body.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { REDACTED } from '../../src/redact/index.js'
import path from 'node:path'
import { runCli } from '../helpers/cli.js'
import { connectMcpClient } from '../helpers/mcp-server.js'
import { PYTHON, PYTHON_MCP_CLIENT, hasPythonModules, printedJson } from '../helpers/python.js'
import { closing, closingServer, temporaryFolder } from '../helpers/teardown.js'

/** An SDK server whose `sync_orders` tool reports its progress, one notification per order, on the call's event stream. */
async function startProgressServer(): Promise<string> {
  const server: http.Server = closingServer(
    createServer((req, res) => {
      const mcp = new McpServer({ name: 'orders', version: '1.0.0' })
      mcp.registerTool('sync_orders', { description: 'Sync the open orders', inputSchema: { count: z.number() } }, async ({ count }, extra) => {
        const token = extra._meta?.progressToken
        for (let order = 1; order <= count; order++) {
          if (token !== undefined) await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: order, total: count, message: `order ${order}` } })
        }
        return { content: [{ type: 'text', text: `synced ${count}` }] }
      })
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined })
      res.on('close', () => void transport.close())
      void mcp.connect(transport).then(() => transport.handleRequest(req, res))
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** List the tools, then call `sync_orders` with progress: what the client saw. */
async function session(url: string, listFirst: boolean): Promise<{ progress: Progress[]; result: unknown }> {
  const { client } = await connectMcpClient(url)
  if (listFirst) await client.listTools()
  const progress: Progress[] = []
  const result = await client.callTool({ name: 'sync_orders', arguments: { count: 3 } }, undefined, { onprogress: (update) => progress.push(update) })
  await client.close()
  return { progress, result }
}

async function record(redactKeys: string[] = []): Promise<{ cassette: Cassette; progress: Progress[]; result: unknown }> {
  const origin = await startProgressServer()
  const storm = createStorm({ redact: { keys: redactKeys } })
  const recorder = createCassetteRecorder(storm, { urlForm: 'origin' })
  const proxy = await startProxy({ targets: [origin], storm, observer: recorder.observer })
  const seen = await session(`${proxy.url}/mcp`, true)
  await proxy.close()
  await recorder.close()
  return { cassette: await recorder.cassette(), ...seen }
}

/** The recorded tool call's request and the event stream that answered it. */
function recordedCall(cassette: Cassette): { request: Record<string, unknown>; answer: string } {
  const exchange = cassette.exchanges.find((candidate) => candidate.route === 'tools/call sync_orders')
  if (!exchange?.request.body || !exchange.response?.body) throw new Error('no recorded tool call')
  return { request: JSON.parse(storedBodyBytes(exchange.request.body).toString('utf8')) as Record<string, unknown>, answer: storedBodyBytes(exchange.response.body).toString('utf8') }
}

describe('MCP progress in record and replay', () => {
  it('records the progress token as sent, and a replayed call delivers its progress to the SDK client, though its token differs from the recording', async () => {
    const recorded = await record()
    expect(recorded.progress.map((update) => update.message)).toEqual(['order 1', 'order 2', 'order 3'])
    const call = recordedCall(recorded.cassette)
    const token = (call.request.params as { _meta: { progressToken: unknown } })._meta.progressToken
    expect(typeof token).toBe('number')
    expect(call.answer).toContain(`"progressToken":${token as number}`)
    expect(call.answer).not.toContain(REDACTED)
    // Without the tools/list the call goes out with another id, so with another progress token.
    const replay = closing(await startReplayServer(recorded.cassette, { order: 'any', allowUnused: true }))
    const replayed = await session(`${replay.url}/mcp`, false)
    expect(replayed.progress).toEqual(recorded.progress)
    expect(replayed.result).toEqual(recorded.result)
    const verdict = replay.verdict()
    expect(verdict.passed).toBe(true)
    expect(verdict.rows.find((row) => row.expected?.startsWith('tools/call sync_orders'))?.result).toBe('ok')
  })

  it('gives the client its own progress token back where the recording redacted it (a user\'s redaction key)', async () => {
    const recorded = await record(['progressToken'])
    const call = recordedCall(recorded.cassette)
    expect((call.request.params as { _meta: { progressToken: unknown } })._meta.progressToken).toBe(REDACTED)
    expect(call.answer).toContain(`"progressToken":"${REDACTED}"`)
    const replay = closing(await startReplayServer(recorded.cassette))
    const replayed = await session(`${replay.url}/mcp`, true)
    expect(replayed.progress).toEqual(recorded.progress)
    expect(replay.verdict()).toMatchObject({ passed: true, served: recorded.cassette.exchanges.length })
  })
})

describe.skipIf(!hasPythonModules('mcp'))('MCP progress in record and replay, with the Python SDK client (toolstorm record / replay, forward mode)', () => {
  it('replays the progress of a tool call to the Python client', async () => {
    const url = `${await startProgressServer()}/mcp`
    const file = path.join(await temporaryFolder('toolstorm-progress-'), 'progress.cassette.jsonl')
    const recorded = await runCli(['record', file, '--port', '0', '--admin-port', '0', '--', PYTHON, PYTHON_MCP_CLIENT, 'progress', url])
    expect(recorded.code, recorded.stderr).toBe(0)
    const live = printedJson<{ progress: unknown[]; result: string }>(recorded.stdout)
    expect(live).toEqual({ progress: [[1, 3, 'order 1'], [2, 3, 'order 2'], [3, 3, 'order 3']], result: 'synced 3' })
    expect(JSON.stringify((await Cassette.load(file)).exchanges)).not.toContain(REDACTED)
    const replayed = await runCli(['replay', file, '--port', '0', '--admin-port', '0', '--', PYTHON, PYTHON_MCP_CLIENT, 'progress', url])
    expect(replayed.code, replayed.stderr).toBe(0)
    expect(printedJson(replayed.stdout)).toEqual(live)
  }, 60_000)
})
