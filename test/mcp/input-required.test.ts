/**
 * `input_required` over Streamable HTTP (revision 2026-07-28), through the proxy: the split SDK's
 * server (`@modelcontextprotocol/server` 2.4, `createMcpHandler`) whose `create_note` asks the
 * client to confirm first, and its client (`@modelcontextprotocol/client` 2.4 pinned to the
 * revision) answering the elicitation and calling again with the input on a new POST and a new id.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import { acceptedContent, createMcpHandler, inputRequired, McpServer } from '@modelcontextprotocol/server'
import { z } from 'zod'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { closing } from '../helpers/teardown.js'

/** The modern notes server over node:http; `notes` holds what it committed. */
async function modernNotesServer(): Promise<{ origin: string; notes: string[]; close(): Promise<void> }> {
  const notes: string[] = []
  const handler = createMcpHandler(() => {
    const server = new McpServer({ name: 'modern-notes', version: '1.0.0' }, { capabilities: { tools: {} } })
    server.registerTool('create_note', { inputSchema: z.object({ key: z.string() }) }, async ({ key }, ctx) => {
      if (acceptedContent(ctx.mcpReq.inputResponses, 'confirm')?.confirm !== true) {
        return inputRequired({ inputRequests: { confirm: inputRequired.elicit({ message: `Create note ${key}?`, requestedSchema: { type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] } }) } })
      }
      notes.push(key)
      return { content: [{ type: 'text', text: `noted ${key}` }] }
    })
    return server
  })
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const headers = new Headers()
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value)
    const response = await handler.fetch(new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, ...(chunks.length ? { body: Buffer.concat(chunks) } : {}) }))
    res.writeHead(response.status, Object.fromEntries(response.headers))
    res.end(Buffer.from(await response.arrayBuffer()))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, notes, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

describe('input_required over Streamable HTTP (2026-07-28)', () => {
  it('the retry that brings the input joins the call that asked for it: one ordinal, one rule decision, one entry in the report with both rounds', async () => {
    const upstream = closing(await modernNotesServer())
    const proxy = closing(await startProxy({ targets: [upstream.origin], config: { rules: [{ name: 'second-note-fails', route: 'tools/call create_note', kind: 'tool_error', message: 'refused', calls: [2] }] } }))
    const client = new Client({ name: 'modern', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } })
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { confirm: true } }))
    await client.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)))
    try {
      expect(await client.callTool({ name: 'create_note', arguments: { key: 'order-1' } })).toMatchObject({ content: [{ type: 'text', text: 'noted order-1' }] })
      expect(await client.callTool({ name: 'create_note', arguments: { key: 'order-2' } })).toMatchObject({ content: [{ type: 'text', text: 'refused' }], isError: true })
      expect(await client.callTool({ name: 'create_note', arguments: { key: 'order-3' } })).toMatchObject({ content: [{ type: 'text', text: 'noted order-3' }] })
    } finally {
      await client.close()
    }
    expect(upstream.notes).toEqual(['order-1', 'order-3'])
    const calls = proxy.storm.report().calls.filter((call) => call.route === 'tools/call create_note')
    expect(calls.map((call) => [call.ordinal, call.fault, call.injected, call.mcp?.outcome, call.mcp?.arguments, call.mcp?.rounds?.length ?? 0])).toEqual([
      [1, null, false, 'result', { key: 'order-1' }, 1],
      [2, 'second-note-fails', true, 'isError', { key: 'order-2' }, 0],
      [3, null, false, 'result', { key: 'order-3' }, 1],
    ])
    expect(calls[0]!.mcp!.rounds).toEqual([{ id: expect.anything(), outcome: 'input_required' }])
    expect(calls[0]!.mcp!.rounds![0]!.id).not.toEqual(calls[0]!.mcp!.id)
  })

  it('a retry that reaches another run cannot join its call: it is a call of its own there, with no earlier rounds', async () => {
    const upstream = closing(await modernNotesServer())
    const proxy = closing(await startProxy({ targets: [upstream.origin], config: { rules: [] } }))
    const client = new Client({ name: 'modern', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } })
    client.setRequestHandler('elicitation/create', async () => {
      // Between the round that asked for input and the retry: the requests go to another run now.
      proxy.storm.decider.activeRun = 'second'
      return { action: 'accept', content: { confirm: true } }
    })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${proxy.url}/mcp`)))
    try {
      expect(await client.callTool({ name: 'create_note', arguments: { key: 'order-1' } })).toMatchObject({ content: [{ type: 'text', text: 'noted order-1' }] })
    } finally {
      await client.close()
    }
    const created = (run: string) => proxy.storm.report(run).calls.filter((call) => call.route === 'tools/call create_note')
    expect(created('default').map((call) => [call.ordinal, call.mcp?.rounds])).toEqual([[1, undefined]])
    expect(created('second').map((call) => [call.ordinal, call.mcp?.rounds])).toEqual([[1, undefined]])
  })
})
