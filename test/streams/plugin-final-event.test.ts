/**
 * Which SSE event ends a stream is a plug-in's word (`ExchangePlugin.isFinalEvent`): the default
 * plug-ins know the model providers' (`[DONE]`, `message_stop`, `response.completed`), and a
 * plug-in for another protocol adds its own beside them. `drop_terminal` drops what they name.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import type { ExchangePlugin } from '../../src/engine/plugin.js'
import { defaultPlugins } from '../../src/default-plugins.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { closing, closingServer } from '../helpers/teardown.js'

const STREAM = 'event: progress\ndata: {"n":1}\n\nevent: end\ndata: {"ok":true}\n\n'

/** A job service whose event streams end with `event: end`. */
const jobs: ExchangePlugin = { name: 'jobs', isFinalEvent: (event) => event === 'end' }

async function startSseUpstream(body: string): Promise<string> {
  const server = closingServer(
    http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.end(body)
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function throughProxy(plugins: ExchangePlugin[], body: string) {
  const upstream = await startSseUpstream(body)
  const proxy = closing(await startProxy({ targets: [upstream], plugins, config: { rules: [{ name: 'no-end', route: 'GET /**', kind: 'drop_terminal' }] } }))
  const text = await (await fetch(`${proxy.url}/jobs/1/events`)).text()
  return { text, injected: proxy.storm.report().calls[0]?.injected }
}

describe("a plug-in's final event", () => {
  it('is dropped by drop_terminal when a plug-in beside the default ones names it', async () => {
    expect(await throughProxy([...defaultPlugins(), jobs], STREAM)).toEqual({ text: 'event: progress\ndata: {"n":1}\n\n', injected: true })
  })

  it("is an ordinary event to the default plug-ins, which still name the providers' ends", async () => {
    expect(await throughProxy(defaultPlugins(), STREAM)).toEqual({ text: STREAM, injected: false })
    expect(await throughProxy([...defaultPlugins(), jobs], 'data: {"n":1}\n\ndata: [DONE]\n\n')).toEqual({ text: 'data: {"n":1}\n\n', injected: true })
  })
})
