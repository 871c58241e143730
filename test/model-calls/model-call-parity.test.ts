/**
 * Every entry point serves an exchange through the same front door (engine/serve.ts) with the
 * storm's own plug-ins (`createStorm(config, { plugins })`), so a model call is recognised whichever
 * way it came in. MSW handlers used to wire their own pipeline without the model-call observer, and
 * in-process replay (`replayCassette`, `useCassette`) chose its own plug-ins without it: their model
 * calls had no model or tokens, and a token budget passed without counting anything.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { PassThrough } from 'node:stream'
import { setupServer } from 'msw/node'
import { ProxyAgent } from 'undici'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { Cassette } from '../../src/cassette/format/cassette.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { cassetteHandlers } from '../../src/cassette/replay/cassette-handlers.js'
import { replayCassette } from '../../src/cassette/replay/replay-cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { contract } from '../../src/contracts/contract.js'
import { createStorm } from '../../src/create-storm.js'
import { defaultPlugins } from '../../src/default-plugins.js'
import { createMemoryFetch } from '../../src/demo/memory-transport.js'
import type { ShippingLogic } from '../../src/demo/shipping-logic.js'
import { combineObservers } from '../../src/combine-observers.js'
import type { ExchangePlugin } from '../../src/engine/plugin.js'
import type { Report } from '../../src/engine/schema/report.js'
import type { Storm } from '../../src/engine/storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { startStdioServer } from '../../src/stdio/stdio-server.js'
import { test as fixture } from '../../src/vitest/index.js'
import { cassettePathFor, createUseCassette } from '../../src/vitest/use-cassette.js'
import { answered, startModelUpstream, USAGE } from '../helpers/model-upstream.js'
import { NOTES_SERVER } from '../helpers/stdio-mcp.js'
import { closing } from '../helpers/teardown.js'
import { through, TRANSPORTS, type Through } from '../helpers/transports.js'
import { startUpstream } from '../helpers/upstream.js'

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }
/** The tokens the call spent (input + output): a budget below it must fail once the call is counted. */
const SPENT = USAGE.chat.prompt_tokens + USAGE.chat.completion_tokens

/** One non-streamed chat completion; its answer read whole. */
async function chat({ base, init }: Pick<Through, 'base' | 'init'>): Promise<void> {
  const response = await fetch(`${base}/v1/chat/completions`, {
    ...init,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify(CHAT),
  } as RequestInit)
  expect(response.status).toBe(200)
  await response.json()
}

function expectModelCall(report: Report): void {
  const [call] = report.calls
  expect(call?.outcome).toBe('response')
  expect(call?.model).toEqual({
    provider: 'openai',
    api: 'chat.completions',
    model: answered('gpt-4o-mini'),
    inputTokens: USAGE.chat.prompt_tokens,
    outputTokens: USAGE.chat.completion_tokens,
    streamed: false,
  })
  // The tokens are counted: a budget under them fails.
  expect(contract(report).atMostTokens(SPENT - 1).passed).toBe(false)
  expect(contract(report).atMostTokens(SPENT).passed).toBe(true)
}

/**
 * One chat completion recorded through the forward proxy, and the origin it was recorded from,
 * closed: whatever answers it now answers from the cassette.
 */
async function recordedChat(): Promise<{ cassette: Cassette; origin: string }> {
  const upstream = await startModelUpstream()
  onTestFinished(() => upstream.close())
  const storm = createStorm({})
  const recorder = createCassetteRecorder(storm, { source: 'proxy' })
  onTestFinished(() => recorder.discard())
  await chat(await through('forward', storm, upstream.url, { observer: recorder.observer }))
  await recorder.close()
  await upstream.close()
  return { cassette: await recorder.cassette(), origin: upstream.url }
}

describe('one model call, every entry point', () => {
  it.each(TRANSPORTS)('records the provider, model and tokens of an OpenAI chat completion served through %s', async (transport) => {
    const upstream = await startModelUpstream()
    onTestFinished(() => upstream.close())
    const storm = createStorm({})
    await chat(await through(transport, storm, upstream.url))
    expectModelCall(storm.report())
  })

  it('records them for a call the replay server answers from a cassette', async () => {
    const { cassette, origin } = await recordedChat()
    const replay = await startReplayServer(cassette)
    const dispatcher = new ProxyAgent({ uri: replay.url, proxyTunnel: false })
    onTestFinished(async () => {
      await dispatcher.close()
      await replay.close()
    })
    await chat({ base: origin, init: { dispatcher } })
    expectModelCall(replay.proxy.storm.report())
  })

  it('records them for a call replayCassette answers in-process, in the storm it was given', async () => {
    const { cassette, origin } = await recordedChat()
    const storm = createStorm({})
    const replay = closing(replayCassette(cassette, { storm }))
    await chat({ base: origin, init: {} })
    replay.dispose()
    replay.assertDone()
    expectModelCall(storm.report())
  })

  it('records them for a call cassetteHandlers answer through MSW, in the storm it was given', async () => {
    const { cassette, origin } = await recordedChat()
    const storm = createStorm({})
    const replay = cassetteHandlers(cassette, { storm })
    const server = closing(setupServer(...replay.handlers))
    server.listen({ onUnhandledRequest: 'error' })
    await chat({ base: origin, init: {} })
    server.close()
    replay.assertDone()
    expectModelCall(storm.report())
  })

  fixture('records them for a call made in a test of the vitest fixture', async ({ storm }) => {
    const upstream = await startModelUpstream()
    onTestFinished(() => upstream.close())
    const made = storm()
    await chat({ base: upstream.url, init: {} })
    expectModelCall(made.report())
  })

  it("records them for a call the fixture's useCassette replays", async () => {
    const { cassette, origin } = await recordedChat()
    const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-parity-'))
    onTestFinished(() => rm(dir, { recursive: true, force: true }))
    const testFile = path.join(dir, 'agent.test.ts')
    await mkdir(path.dirname(cassettePathFor(testFile, 'chat')), { recursive: true })
    await cassette.save(cassettePathFor(testFile, 'chat'))
    const cassettes = createUseCassette({ owner: {}, testFile, updateSnapshot: 'none' })
    onTestFinished(() => cassettes.dispose())
    const { mode, storm } = await cassettes.useCassette('chat')
    expect(mode).toBe('replay')
    await chat({ base: origin, init: {} })
    await cassettes.finish()
    expectModelCall(storm.report())
  })

  it("records them for a call the demo's in-memory transport serves", async () => {
    const storm = createStorm({})
    // The demo's upstream, answering as a model provider does (the shape of the model upstream's answer).
    const provider: ShippingLogic = {
      shipments: [],
      handle: async () => ({
        status: 200,
        body: { id: 'chatcmpl-1', object: 'chat.completion', model: answered(CHAT.model), choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }], usage: { ...USAGE.chat, total_tokens: SPENT } },
      }),
    } as unknown as ShippingLogic
    const memoryFetch = createMemoryFetch(storm, provider)
    const response = await memoryFetch('https://api.openai.test/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(CHAT) })
    expect(response.status).toBe(200)
    await response.json()
    expectModelCall(storm.report())
  })
})

/** A plug-in that notes the route of every exchange it is asked to observe. */
function noting(seen: string[]): ExchangePlugin {
  return { name: 'noting', observe: (inner) => combineObservers({ onStart: (exchange) => void seen.push(exchange.record?.route ?? '?') }, inner) }
}

/** A storm served with the default plug-ins and `noting`. */
function notedStorm(seen: string[]): Storm {
  return createStorm({}, { plugins: [...defaultPlugins(), noting(seen)] })
}

describe("the storm's own plug-ins, every entry point", () => {
  it.each(TRANSPORTS)('serve an exchange through %s', async (transport) => {
    const upstream = await startUpstream()
    onTestFinished(() => upstream.close())
    const seen: string[] = []
    const { base, init } = await through(transport, notedStorm(seen), upstream.url)
    expect((await fetch(`${base}/items/1`, init as RequestInit)).status).toBe(200)
    expect(seen).toEqual(['GET /items/1'])
  })

  it('serve an exchange intercept() answers from a cassette (replayCassette)', async () => {
    const { cassette, origin } = await recordedChat()
    const seen: string[] = []
    const replay = closing(replayCassette(cassette, { storm: notedStorm(seen) }))
    await chat({ base: origin, init: {} })
    replay.dispose()
    expect(seen).toEqual(['POST /v1/chat/completions'])
  })

  it('serve a tool call of the stdio wrapper (toolstorm mcp)', async () => {
    const seen: string[] = []
    const input = new PassThrough()
    const output = new PassThrough()
    const answers: string[] = []
    output.on('data', (chunk: Buffer) => answers.push(...chunk.toString().split('\n').filter(Boolean)))
    const server = startStdioServer({ storm: notedStorm(seen), input, output, command: NOTES_SERVER, warn: () => undefined })
    onTestFinished(async () => {
      input.end()
      await server.ended
    })
    server.listen()
    input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`)
    input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'count', arguments: {} } })}\n`)
    await expect.poll(() => answers.some((line) => (JSON.parse(line) as { id?: number }).id === 2)).toBe(true)
    expect(seen).toEqual(['initialize', 'tools/call count'])
  })
})

describe('a transport given plug-ins of its own (deprecated: they are the storm’s)', () => {
  it('still serves with them, hooks included, and says once where they belong now', async () => {
    const warnings: Error[] = []
    const listen = (warning: Error) => void warnings.push(warning)
    process.on('warning', listen)
    onTestFinished(() => void process.off('warning', listen))
    const upstream = await startModelUpstream()
    onTestFinished(() => upstream.close())

    // modelCalls: false on intercept() still turns model calls off for that interception (twice: one warning).
    for (const quiet of [createStorm({}), createStorm({})]) {
      const interception = closing(intercept(quiet, { filter: (url) => url.origin === upstream.url, modelCalls: false }))
      await chat({ base: upstream.url, init: {} })
      interception.dispose()
      expect(quiet.report().calls.map((call) => [call.outcome, call.model])).toEqual([['response', undefined]])
    }

    // A plug-in given to startProxy({ storm }) shapes the storm's refusals, though the storm was made without it.
    const teapot: ExchangePlugin = { name: 'teapot', shapeFailure: (_request, failure) => (failure === 'rate_limit' ? { status: 418, headers: {}, body: new TextEncoder().encode('short and stout') } : null) }
    const busy = createStorm({ rules: [{ name: 'busy', route: 'POST /**', kind: 'rate_limit' }] })
    const { base } = await through('reverse', busy, upstream.url, { proxy: { plugins: [teapot] } })
    const refused = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(CHAT) })
    expect([refused.status, await refused.text()]).toEqual([418, 'short and stout'])

    await expect.poll(() => warnings.filter((warning) => (warning as { code?: string }).code === 'TOOLSTORM_TRANSPORT_PLUGINS').map((warning) => [warning.name, warning.message.split(':')[0]])).toEqual([
      ['DeprecationWarning', 'intercept()'],
      ['DeprecationWarning', 'startProxy({ storm })'],
    ])
  })
})
