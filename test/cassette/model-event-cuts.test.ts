/**
 * A cut inside a model stream's tool-call arguments (#26, `stream_cut` with `at: tool_arguments`)
 * is recorded with where it fell and what the client got, and replays the same with no upstream:
 * the openai SDK holds the same half JSON object and gets the same "terminated" error.
 */
import OpenAI from 'openai'
import { ProxyAgent } from 'undici'
import { expect, it, onTestFinished } from 'vitest'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { exportHar } from '../../src/cassette/har/har-export.js'
import { importHar } from '../../src/cassette/har/har-import.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { closing } from '../helpers/teardown.js'
import { startModelUpstream, TOOL } from '../helpers/model-upstream.js'

const tools = [{ type: 'function' as const, function: { name: TOOL.name, parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]

/** Stream a chat that offers a tool through `proxyUrl`; what the SDK saw of the arguments, and how it ended. */
async function streamToolCall(proxyUrl: string, upstreamUrl: string): Promise<{ args: string; error: string | null }> {
  const dispatcher = new ProxyAgent({ uri: proxyUrl, proxyTunnel: false })
  onTestFinished(() => dispatcher.close())
  const client = new OpenAI({ apiKey: 'sk-test', baseURL: `${upstreamUrl}/v1`, maxRetries: 0, timeout: 10_000, fetchOptions: { dispatcher } as never })
  const stream = await client.chat.completions.create({ model: 'gpt-x', messages: [{ role: 'user', content: 'Weather in Paris?' }], tools, stream: true })
  let args = ''
  try {
    for await (const chunk of stream) args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? ''
    return { args, error: null }
  } catch (error) {
    return { args, error: `${(error as Error).name}: ${(error as Error).message}` }
  }
}

it('records a cut inside the tool arguments with where it fell, and replays the same half object and error', async () => {
  const upstream = await startModelUpstream({ gapMs: 10 })
  onTestFinished(() => upstream.close())
  const storm = createStorm({ rules: [{ name: 'cut-args', route: 'POST /v1/chat/completions', kind: 'stream_cut', at: 'tool_arguments', after: 2 }] })
  const recorder = createCassetteRecorder(storm, { source: 'proxy' })
  const proxy = await startProxy({ storm, observer: recorder.observer })
  const recorded = await streamToolCall(proxy.url, upstream.url)
  await proxy.close()
  await recorder.close()
  const cassette = await recorder.cassette()

  expect(recorded).toEqual({ args: TOOL.arguments.slice(0, 2).join(''), error: 'TypeError: terminated' })
  const exchange = cassette.exchanges[0]!
  expect(exchange.cut).toMatchObject({ events: 3, at: 'tool_arguments', deltas: 2 })
  expect(exchange.response?.stream?.events).toHaveLength(3)
  // The upstream's whole answer stays as evidence; the client's body stops inside the arguments.
  expect(exchange.upstream?.body?.data).toContain(JSON.stringify(TOOL.arguments[2]).slice(1, -1))
  expect(exchange.response?.body?.data).not.toContain(JSON.stringify(TOOL.arguments[2]).slice(1, -1))
  // A cassette written and read back, and a HAR round trip, keep where the cut fell.
  const reread = Cassette.parse(cassette.toString())
  expect(reread.exchanges[0]?.cut).toEqual(exchange.cut)
  expect((await importHar(exportHar(cassette))).exchanges[0]?.cut).toEqual(exchange.cut)

  await upstream.close()
  const replay = await startReplayServer(reread, { speed: 'instant' })
  closing(replay)
  expect(await streamToolCall(replay.url, upstream.url)).toEqual(recorded)
  expect((await replay.close()).passed).toBe(true)
})
