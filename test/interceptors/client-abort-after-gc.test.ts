/**
 * In-process, a client's abort ends a stalled body even after a garbage collection. A Node
 * `Request` follows the signal it was built with only while the Request object lives (undici holds
 * its own AbortController weakly). Once the interceptor had answered, nothing held the request, and
 * a client that keeps nothing but its signal (an SDK's stream helper) was collected along with it:
 * its abort reached no one and its promise never settled (the openai SDK's Responses helper waited
 * out CI's 60 s timeout on Node 24), and a relayed body ran to its end as if nothing happened.
 */
import { describe, expect, it } from 'vitest'
import { createStorm } from '../../src/create-storm.js'
import { collectGarbage } from '../helpers/collected.js'
import { closing } from '../helpers/teardown.js'
import { startModelUpstream } from '../helpers/model-upstream.js'
import { CHAT } from '../helpers/model-scenario.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { IN_PROCESS, through, type Transport } from '../helpers/transports.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Read a stream to its end from a task only the client's signal can reach, as an SDK helper does:
 * how it ended. `flowing` is told of each chunk (it holds nothing of the request).
 */
function readDetached(url: string, signal: AbortSignal, flowing: () => void): Promise<string> {
  return new Promise((resolve) => {
    void (async () => {
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-x', stream: true, messages: [{ role: 'user', content: 'Say hello.' }] }),
          signal,
        })
        for await (const _chunk of response.body!) flowing()
        resolve('ended')
      } catch (error) {
        resolve((error as Error).name)
      }
    })()
  })
}

const cases = IN_PROCESS.flatMap((transport): Array<[Transport, string, StormConfigInput, number]> => [
  [transport, 'the stalled body', { rules: [{ name: 'stall', route: CHAT, kind: 'stream_stall', after: 2 }] }, 20],
  [transport, 'a slow relayed body', { rules: [] }, 250],
])

describe('in-process, a client abort after a garbage collection', () => {
  it.each(cases)('%s: still errors %s', async (transport, _body, config, gapMs) => {
    const upstream = closing(await startModelUpstream({ gapMs }))
    await through(transport, createStorm(config), upstream.url)
    // The client keeps its signal only (as AbortSignal.timeout's timer would); it times out once the
    // garbage is collected, whenever that is on a loaded machine.
    const client = new AbortController()
    let flowing = () => {}
    const first = new Promise<void>((resolve) => (flowing = resolve))
    const outcome = readDetached(`${upstream.url}/v1/chat/completions`, client.signal, () => flowing())
    await first // the body is flowing (or the stall has begun)
    for (let i = 0; i < 3; i++) {
      collectGarbage()
      await sleep(10) // a turn for what the collection frees
    }
    client.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'))
    expect(await Promise.race([outcome, sleep(3_000).then(() => 'still waiting 3 s after the abort')])).toBe('TimeoutError')
  })
})
