/**
 * DNS rebinding through the data plane (#37, item 1): in reverse mode the upstream gets the
 * target's Host, so an MCP SDK server's own Host check (`enableDnsRebindingProtection`) always sees
 * `127.0.0.1:<port>` behind the proxy. The data plane refuses requests addressed to it whose Host
 * names another site (the name a rebinding page's requests carry), as the admin API does; Origin
 * is passed unchanged, so a server's Origin check still works, forward mode included.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { describe, expect, it } from 'vitest'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { BIN } from '../helpers/cli.js'
import { recordMcpSession } from '../helpers/mcp-recording.js'
import { connectMcpClient } from '../helpers/mcp-server.js'
import { closing, closingChild, closingServer } from '../helpers/teardown.js'
import { spawn } from 'node:child_process'

const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'page', version: '1' } } })

interface GuardedServer {
  readonly origin: string
  /** The Host header of every request that reached the server. */
  readonly hosts: string[]
}

/** An MCP server of the official SDK with its DNS-rebinding protection on: it knows only its own Host and Origin. */
async function startGuardedServer(): Promise<GuardedServer> {
  const hosts: string[] = []
  let port = 0
  const server = closingServer(
    http.createServer((req, res) => {
      hosts.push(req.headers.host ?? '')
      const mcp = new McpServer({ name: 'guarded', version: '1.0.0' })
      mcp.registerTool('read_notes', { description: 'Read the notes' }, () => ({ content: [{ type: 'text', text: 'private notes' }] }))
      const own = [`127.0.0.1:${port}`, `localhost:${port}`]
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
        enableDnsRebindingProtection: true,
        allowedHosts: own,
        allowedOrigins: own.map((host) => `http://${host}`),
      })
      res.on('close', () => void transport.close())
      void mcp.connect(transport).then(() => transport.handleRequest(req, res))
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
  return { origin: `http://127.0.0.1:${port}`, hosts }
}

/** POST an `initialize` as a page's script would after rebinding: its own name in Host and Origin. `via`: a forward proxy (absolute-form). */
function post(url: string, headers: Record<string, string>, via?: string, body = INITIALIZE): Promise<{ status: number; body: string }> {
  const target = new URL(url)
  const proxy = via ? new URL(via) : null
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: (proxy ?? target).hostname,
        port: (proxy ?? target).port,
        path: proxy ? target.href : target.pathname,
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': String(Buffer.byteLength(body)), ...headers },
      },
      (res) => {
        let text = ''
        res.on('data', (chunk: Buffer) => (text += chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

const rebound = (port: string) => ({ host: `evil.example.com:${port}`, origin: `http://evil.example.com:${port}` })

describe('the data plane against DNS rebinding', () => {
  it('refuses a request whose Host names another site (403 ERR_HOST_NOT_ALLOWED), which the SDK server behind it could no longer see', async () => {
    const server = await startGuardedServer()
    // Direct, the SDK's own check refuses the rebound name.
    expect((await post(`${server.origin}/mcp`, rebound(new URL(server.origin).port))).status).toBe(403)
    const proxy = closing(await startProxy({ targets: [server.origin] }))
    const port = new URL(proxy.url).port
    const reached = server.hosts.length
    const refused = await post(`${proxy.url}/mcp`, rebound(port))
    expect(refused.status).toBe(403)
    expect(JSON.parse(refused.body)).toEqual({
      error: {
        type: 'proxy_error',
        code: 'ERR_HOST_NOT_ALLOWED',
        message: `[toolstorm] Failed to serve "POST /mcp": its Host header "evil.example.com:${port}" names another site, as a web page's request does after DNS rebinding, so it was not forwarded. Address the proxy by a loopback address or the --host it listens on, or allow the name with --allow-host (TOOLSTORM_ALLOW_HOSTS).`,
      },
    })
    expect(server.hosts.length).toBe(reached)
    // A Host without the port, and one in upper case, are the same name.
    expect((await post(`${proxy.url}/mcp`, { host: 'EVIL.example.com' })).status).toBe(403)
    // The proxy's own names pass, and the server sees the target's Host as always.
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'LOCALHOST']) expect((await post(`${proxy.url}/mcp`, { host })).status, host).toBe(200)
    expect(new Set(server.hosts.slice(reached))).toEqual(new Set([new URL(server.origin).host]))
    // The SDK client, which sends the proxy's address, works as before.
    const { client } = await connectMcpClient(`${proxy.url}/mcp`)
    expect((await client.callTool({ name: 'read_notes', arguments: {} })).content).toEqual([{ type: 'text', text: 'private notes' }])
    await client.close()
  })

  it('serves the names given with allowHosts (exact and by suffix) and any IP literal, and still refuses other names', async () => {
    const server = await startGuardedServer()
    const proxy = closing(await startProxy({ targets: [server.origin], allowHosts: ['toolstorm', '*.svc.cluster.local'] }))
    for (const host of ['toolstorm:8787', 'toolstorm.ci.svc.cluster.local', '10.96.0.12:8787', '[fd00::17]:8787']) expect((await post(`${proxy.url}/mcp`, { host })).status, host).toBe(200)
    for (const host of ['toolstorm.evil.example', 'svc.cluster.local.evil.example', 'x']) expect((await post(`${proxy.url}/mcp`, { host })).status, host).toBe(403)
  })

  it('refuses a rebound Host at a replay server too: the cassette answers it otherwise', async () => {
    const { cassette } = await recordMcpSession({ stateful: false, json: true }, (url) => connectMcpClient(url))
    const replay = closing(await startReplayServer(cassette, { allowUnused: true }))
    const port = new URL(replay.url).port
    const recorded = cassette.exchanges[0]!.request.body!.data
    const refused = await post(`${replay.url}/mcp`, rebound(port), undefined, recorded)
    expect(refused.status).toBe(403)
    expect(JSON.parse(refused.body).error.message).toContain('Address the replay server by a loopback address')
    const answered = await post(`${replay.url}/mcp`, { host: `localhost:${port}` }, undefined, recorded)
    expect(answered.status).toBe(200)
    expect(answered.body).toContain('"serverInfo"')
  })

  it('forward mode: the Host names the target by design and is not checked; Origin passes unchanged, so the server refuses a foreign page itself', async () => {
    const server = await startGuardedServer()
    const proxy = closing(await startProxy({}))
    const own = new URL(server.origin).host
    expect((await post(`${server.origin}/mcp`, { host: own }, proxy.url)).status).toBe(200)
    const foreignPage = await post(`${server.origin}/mcp`, { host: own, origin: 'http://evil.example.com' }, proxy.url)
    expect(foreignPage.status).toBe(403)
    expect(foreignPage.body).toContain('Invalid Origin header')
    // A forward proxy is reached by origin-form requests only from a rebinding page: refused, as before.
    expect((await post(`${proxy.url}/mcp`, rebound(new URL(proxy.url).port))).status).toBe(400)
  })
})

describe('toolstorm proxy --allow-host', () => {
  async function withCli(args: string[], env: NodeJS.ProcessEnv, target: string, use: (url: string) => Promise<void>): Promise<void> {
    const child = closingChild(spawn(process.execPath, [BIN, 'proxy', '--target', target, '--port', '0', '--admin-port', '0', '--ready-json', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } }))
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString()))
      child.once('exit', (code) => reject(new Error(`toolstorm proxy exited ${code} before it was ready`)))
    })
    const ready = JSON.parse(line) as { url: string }
    await use(ready.url)
  }

  it('takes the flag, and TOOLSTORM_ALLOW_HOSTS when the flag is absent', async () => {
    const server = await startGuardedServer()
    await withCli(['--allow-host', 'toolstorm'], {}, server.origin, async (url) => {
      expect((await post(`${url}/mcp`, { host: 'toolstorm:8787' })).status).toBe(200)
      expect((await post(`${url}/mcp`, { host: 'elsewhere.example' })).status).toBe(403)
    })
    await withCli([], { TOOLSTORM_ALLOW_HOSTS: 'elsewhere.example, toolstorm' }, server.origin, async (url) => {
      expect((await post(`${url}/mcp`, { host: 'elsewhere.example' })).status).toBe(200)
    })
  })
})
