/**
 * Every transport serves an exchange through the same front door (engine/serve.ts) with the same
 * plug-ins, so a model call is recognised whichever way it came in. MSW handlers used to wire
 * their own pipeline without the model-call observer: their model calls had no model or tokens.
 */
import { ProxyAgent } from 'undici'
import { describe, expect, it, onTestFinished } from 'vitest'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { startReplayServer } from '../../src/cassette/replay/replay-server.js'
import type { Report } from '../../src/engine/schema/report.js'
import { createStorm } from '../../src/engine/storm.js'
import { answered, startModelUpstream, USAGE } from '../helpers/model-upstream.js'
import { through, TRANSPORTS, type Through } from '../helpers/transports.js'

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }

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
}

describe('one model call, every transport', () => {
  it.each(TRANSPORTS)('records the provider, model and tokens of an OpenAI chat completion served through %s', async (transport) => {
    const upstream = await startModelUpstream()
    onTestFinished(() => upstream.close())
    const storm = createStorm({})
    await chat(await through(transport, storm, upstream.url))
    expectModelCall(storm.report())
  })

  it('records them for a call the replay server answers from a cassette', async () => {
    const upstream = await startModelUpstream()
    onTestFinished(() => upstream.close())
    const storm = createStorm({})
    const recorder = createCassetteRecorder(storm, { source: 'proxy' })
    onTestFinished(() => recorder.discard())
    await chat(await through('forward', storm, upstream.url, { observer: recorder.observer }))
    await recorder.close()

    const replay = await startReplayServer(await recorder.cassette())
    const dispatcher = new ProxyAgent({ uri: replay.url, proxyTunnel: false })
    onTestFinished(async () => {
      await dispatcher.close()
      await replay.close()
    })
    await upstream.close()
    await chat({ base: upstream.url, init: { dispatcher } })
    expectModelCall(replay.proxy.storm.report())
  })
})
