import http from 'node:http'
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { MCP_BODY_LIMIT } from '../../src/mcp/mcp-options.js'
import { createStorm, parseConfig } from '../../src/create-storm.js'
import type { Report } from '../../src/engine/schema/report.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { closing } from '../helpers/teardown.js'

/** An upstream that answers every POST with the number of body bytes and their sum, as JSON. */
async function countingUpstream(): Promise<{ origin: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    let bytes = 0
    let sum = 0
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length
      for (const byte of chunk) sum = (sum + byte) % 65521
    })
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ bytes, sum })))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

const MCP_ACCEPT = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
const rpc = (method: string, params: unknown = {}) => JSON.stringify({ jsonrpc: '2.0', id: 1, method, params })

type Requests = Array<{ path: string; headers: Record<string, string>; body: string }>

/** The requests sent through a proxy in front of a counting upstream; the report, both closed when the test finishes. */
async function reportOf(config: object, requests: Requests): Promise<Report> {
  const upstream = closing(await countingUpstream())
  const proxy = closing(await startProxy({ targets: [upstream.origin], config }))
  for (const request of requests) await (await fetch(proxy.url + request.path, { method: 'POST', headers: request.headers, body: request.body })).text()
  return proxy.storm.report()
}

const routesOf = async (config: object, requests: Requests): Promise<string[]> => (await reportOf(config, requests)).calls.map((call) => call.route)

describe('recognising MCP requests', () => {
  it('names a request by its JSON-RPC method only when its head says MCP: an Accept of both answers, or Mcp-Method', async () => {
    const routes = await routesOf({}, [
      { path: '/mcp', headers: MCP_ACCEPT, body: rpc('tools/call', { name: 'create_shipment' }) },
      { path: '/mcp', headers: { 'content-type': 'application/json', 'mcp-method': 'resources/read' }, body: rpc('resources/read', { uri: 'file:///orders.csv' }) },
      { path: '/mcp', headers: MCP_ACCEPT, body: rpc('prompts/get', { name: 'summarize' }) },
      // A model API's streaming call is not MCP: it does not accept both.
      { path: '/mcp', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body: rpc('tools/call', { name: 'x' }) },
      // Accepting both but not JSON-RPC 2.0: plain HTTP.
      { path: '/mcp', headers: MCP_ACCEPT, body: JSON.stringify({ method: 'tools/call' }) },
      { path: '/mcp', headers: MCP_ACCEPT, body: '[' + rpc('tools/list') + ']' },
    ])
    expect(routes).toEqual(['tools/call create_shipment', 'resources/read file:///orders.csv', 'prompts/get summarize', 'POST /mcp', 'POST /mcp', 'POST /mcp'])
  })

  it('names a resource read without the URI\'s query, and keeps a token in it out of the report', async () => {
    const uri = 'https://files.test/orders.csv?access_token=tok_9f8e7d6c5b4a3f2e1d0c'
    const report = await reportOf({}, [{ path: '/mcp', headers: MCP_ACCEPT, body: rpc('resources/read', { uri }) }])
    expect(report.calls.map((call) => call.route)).toEqual(['resources/read https://files.test/orders.csv'])
    expect(report.calls[0]?.mcp?.tool).toBe('https://files.test/orders.csv?access_token=[REDACTED]')
    expect(JSON.stringify(report)).not.toContain('tok_9f8e7d6c5b4a3f2e1d0c')
  })

  it('names requests to a declared endpoint without the MCP head, and none when detection is off', async () => {
    const plain = { 'content-type': 'application/json' }
    const routes = await routesOf({ mcp: { endpoints: ['/rpc/*'], detect: false } }, [
      { path: '/rpc/v1', headers: plain, body: rpc('tools/call', { name: 'get_quote' }) },
      { path: '/mcp', headers: MCP_ACCEPT, body: rpc('tools/call', { name: 'get_quote' }) },
    ])
    expect(routes).toEqual(['tools/call get_quote', 'POST /mcp'])
  })

  it(`forwards a body over ${MCP_BODY_LIMIT} bytes unchanged and names it as HTTP`, async () => {
    const padding = 'x'.repeat(MCP_BODY_LIMIT)
    const body = rpc('tools/call', { name: 'upload', arguments: { data: padding } })
    let sum = 0
    for (const byte of Buffer.from(body)) sum = (sum + byte) % 65521
    const upstream = closing(await countingUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.origin] }))
    // Streamed (chunked, no length): the bound is found while reading.
    const chunked = await new Promise<string>((resolve, reject) => {
      const req = http.request(`${proxy.url}/mcp`, { method: 'POST', headers: MCP_ACCEPT }, (res) => {
        let text = ''
        res.on('data', (chunk: Buffer) => (text += chunk))
        res.on('end', () => resolve(text))
      })
      req.on('error', reject)
      for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.slice(i, i + 64 * 1024))
      req.end()
    })
    // With a Content-Length over the bound: not read first at all.
    const announced = await (await fetch(`${proxy.url}/mcp`, { method: 'POST', headers: MCP_ACCEPT, body })).json()
    const smallBody = rpc('tools/call', { name: 'upload', arguments: { data: 'x' } })
    const small = await (await fetch(`${proxy.url}/mcp`, { method: 'POST', headers: MCP_ACCEPT, body: smallBody })).json()
    expect(JSON.parse(chunked)).toEqual({ bytes: body.length, sum })
    expect(announced).toEqual({ bytes: body.length, sum })
    expect(small).toMatchObject({ bytes: smallBody.length })
    expect(proxy.storm.report().calls.map((call) => call.route)).toEqual(['POST /mcp', 'POST /mcp', 'tools/call upload'])
  })

  it('names a body over the bound by its Mcp-Method and Mcp-Name headers (revision 2026-07-28), forwarding it unchanged', async () => {
    const body = rpc('tools/call', { name: 'upload_file', arguments: { data: 'x'.repeat(MCP_BODY_LIMIT) } })
    const headers = { 'content-type': 'application/json', 'mcp-method': 'tools/call', 'mcp-name': 'upload_file' }
    const upstream = closing(await countingUpstream())
    const proxy = closing(await startProxy({ targets: [upstream.origin], config: { rules: [{ name: 'down', route: 'tools/call upload_*', kind: 'unavailable', calls: [2] }] } }))
    // Streamed (the bound found while reading), then announced (not read at all).
    const streamed = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${proxy.url}/mcp`, { method: 'POST', headers }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      })
      req.on('error', reject)
      for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.slice(i, i + 64 * 1024))
      req.end()
    })
    const announced = await fetch(`${proxy.url}/mcp`, { method: 'POST', headers, body })
    await announced.body?.cancel()
    expect([streamed, announced.status]).toEqual([200, 503])
    const calls = proxy.storm.report().calls
    expect(calls.map((call) => call.route)).toEqual(['tools/call upload_file', 'tools/call upload_file'])
    expect(calls[0]?.mcp).toMatchObject({ method: 'tools/call', tool: 'upload_file', id: null })
  })

  it('routes a read body by its message when its Mcp-Method/Mcp-Name headers disagree (the server refuses it with -32020), and reports what the headers said', async () => {
    const upstream = closing(await countingUpstream())
    const rules = [
      { name: 'by-body', route: 'tools/call get_quote', kind: 'rpc_error', code: -32603, message: 'routed by the body', calls: [2] },
      { name: 'by-header', route: 'tools/call delete_everything', kind: 'unavailable' },
    ]
    const proxy = closing(await startProxy({ targets: [upstream.origin], config: { rules } }))
    const post = (headers: Record<string, string>) =>
      fetch(`${proxy.url}/mcp`, { method: 'POST', headers: { ...MCP_ACCEPT, ...headers }, body: rpc('tools/call', { name: 'get_quote', arguments: {} }) }).then(async (response) => [response.status, await response.json()])
    const agreeing = await post({ 'mcp-method': 'tools/call', 'mcp-name': '=?base64?' + Buffer.from('get_quote').toString('base64') + '?=' })
    const disagreeing = await post({ 'mcp-method': 'tools/call', 'mcp-name': 'delete_everything' })
    const wrongMethod = await post({ 'mcp-method': 'tools/list' })
    const older = await post({})
    expect(agreeing).toEqual([200, expect.objectContaining({ bytes: expect.any(Number) })])
    // Call #2 of the body's route: its rule fires; the header's route is never taken.
    expect(disagreeing).toEqual([200, { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'routed by the body' } }])
    expect(wrongMethod[0]).toBe(200)
    expect(older[0]).toBe(200)
    const calls = proxy.storm.report().calls
    expect(calls.map((call) => [call.route, call.fault, call.mcp?.headerMismatch ?? null])).toEqual([
      ['tools/call get_quote', null, null],
      ['tools/call get_quote', 'by-body', { method: 'tools/call', name: 'delete_everything' }],
      ['tools/call get_quote', null, { method: 'tools/list', name: null }],
      ['tools/call get_quote', null, null],
    ])
  })

  it('names a body over the bound by its Mcp-Method and Mcp-Name headers in-process too', async () => {
    const body = rpc('tools/call', { name: 'upload_file', arguments: { data: 'x'.repeat(MCP_BODY_LIMIT) } })
    const upstream = closing(await countingUpstream())
    const storm = createStorm({ rules: [{ name: 'down', route: 'tools/call upload_*', kind: 'unavailable', calls: [1] }] })
    const interception = intercept(storm, { filter: (url) => url.origin === upstream.origin })
    try {
      const headers = { 'content-type': 'application/json', 'mcp-method': 'tools/call', 'mcp-name': 'upload_file' }
      const statuses: number[] = []
      for (let i = 0; i < 2; i++) {
        const response = await fetch(`${upstream.origin}/mcp`, { method: 'POST', headers, body })
        statuses.push(response.status)
        if (response.status === 200) expect(await response.json()).toMatchObject({ bytes: body.length })
        else await response.body?.cancel()
      }
      expect(statuses).toEqual([503, 200])
      expect(storm.report().calls.map((call) => call.route)).toEqual(['tools/call upload_file', 'tools/call upload_file'])
    } finally {
      interception.dispose()
    }
  })

  it('drops an MCP request whose client leaves mid-body, forwarding nothing, and goes on serving', async () => {
    const upstream = closing(await countingUpstream())
    let upstreamRequests = 0
    const proxy = closing(await startProxy({ targets: [upstream.origin], observer: { onStart: () => void upstreamRequests++ } }))
    const { port } = new URL(proxy.url)
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => {
        socket.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 500\r\n\r\n{"jsonrpc":"2.0",`)
        setTimeout(() => socket.destroy(), 50)
      })
      socket.on('close', () => resolve())
      socket.on('error', reject)
    })
    const after = await (await fetch(`${proxy.url}/mcp`, { method: 'POST', headers: MCP_ACCEPT, body: rpc('tools/list') })).json()
    expect(after).toEqual({ bytes: rpc('tools/list').length, sum: expect.any(Number) })
    expect(upstreamRequests).toBe(1)
    expect(proxy.storm.report().calls.map((call) => call.route)).toEqual(['tools/list'])
  })

  it('refuses an MCP endpoint that is not a path, naming the field', () => {
    expect(() => parseConfig({ mcp: { endpoints: ['mcp'] } }, 'rules.yaml')).toThrow(
      'Failed to load rules from rules.yaml: $.mcp.endpoints[0]: expected an MCP endpoint path such as "/mcp" or "http://host/mcp" ("mcp" must start with "/" or be an absolute http(s) URL).',
    )
  })
})
