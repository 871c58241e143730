/**
 * A dashboard stream whose client stops reading (a stuck client, a stopped process) costs a
 * bounded amount (#31): past `maxPending` calls and effects, what waits for it is dropped, and it
 * gets one fresh snapshot, the whole run, when it reads again. Before, every call of the run
 * waited for it in memory for as long as it did not read.
 */
import http from 'node:http'
import type net from 'node:net'
import { expect, it, onTestFinished } from 'vitest'
import { createEventStreams, type StreamBatch, type StreamSnapshot } from '../../src/proxy/admin/events.js'
import { createStorm } from '../../src/create-storm.js'

const MAX_PENDING = 50
const turn = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

it('sends a client that stopped reading one fresh snapshot when it reads again, keeping no more than the bound for it meanwhile', async () => {
  const storm = createStorm({})
  const streams = createEventStreams(storm, { flushMs: 5, maxPending: MAX_PENDING })
  // The test's own view of the server side of the stream: whether the client stopped taking it.
  let serverSide: http.ServerResponse | null = null
  const server = http.createServer((req, res) => {
    serverSide = res
    void streams.route(req, res, new URL(req.url ?? '/', 'http://admin'))
  })
  onTestFinished(() => {
    streams.close()
    server.closeAllConnections()
    server.close()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo

  // node:http reads the chunked framing; paused, it stops reading the socket as any stuck client.
  let text = ''
  const subscriber = await new Promise<http.IncomingMessage>((resolve, reject) => http.get({ host: '127.0.0.1', port, path: '/events', agent: false }, resolve).on('error', reject))
  onTestFinished(() => void subscriber.destroy())
  subscriber.setEncoding('utf8')
  subscriber.on('data', (chunk: string) => (text += chunk))
  while (!text.includes('event: snapshot')) await turn(5)
  subscriber.pause()

  let calls = 0
  const call = (path: string) => {
    storm.begin({ method: 'GET', url: new URL(`http://tool.test${path}`), headers: {} }).finish('response', 200)
    calls++
  }
  // Calls with long URLs until every buffer between the stream and its client is full.
  const padding = 'x'.repeat(8 * 1024)
  while (!(serverSide as http.ServerResponse | null)?.writableNeedDrain) {
    for (let i = 0; i < 50; i++) call(`/items/${calls}/${padding}`)
    await turn(10)
  }
  // Then more than the bound, while the client still reads nothing.
  for (let i = 0; i < 3 * MAX_PENDING; i++) call(`/small/${i}`)
  await turn(50)

  subscriber.resume()
  const events = () =>
    text
      .split('\n\n')
      .slice(0, -1) // the last block may be an event still arriving
      .map((block) => ({ event: /^event: (.*)$/m.exec(block)?.[1], data: /^data: (.*)$/m.exec(block)?.[1] }))
      .filter((e): e is { event: string; data: string } => e.event !== undefined && e.data !== undefined)
  const snapshots = () => events().filter((e) => e.event === 'snapshot')
  const deadline = Date.now() + 20_000
  while (snapshots().length < 2 && Date.now() < deadline) await turn(20)
  expect(snapshots().length).toBeGreaterThanOrEqual(2)
  // The fresh snapshot is the whole run: the calls dropped while the client read nothing are in it.
  const fresh = JSON.parse(snapshots()[1]!.data) as StreamSnapshot
  expect(fresh.report.calls).toHaveLength(calls)
  expect(fresh.report.calls.at(-1)?.url).toBe(`http://tool.test/small/${3 * MAX_PENDING - 1}`)
  // No batch ever carried more than the bound.
  const largest = Math.max(0, ...events().filter((e) => e.event === 'batch').map((e) => (JSON.parse(e.data) as StreamBatch).calls.length))
  expect(largest).toBeLessThanOrEqual(MAX_PENDING)
})
