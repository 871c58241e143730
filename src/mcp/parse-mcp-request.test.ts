import { describe, expect, it } from 'vitest'
import { mcpRouteName } from './mcp-request.js'
import { parseMcpRequest } from './parse-mcp-request.js'

const parse = (value: unknown, session: string | null = null) => parseMcpRequest(Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)), session)

describe('parseMcpRequest', () => {
  it('reads the method, id, target and arguments of a tool call', () => {
    expect(parse({ jsonrpc: '2.0', id: 'a-1', method: 'tools/call', params: { name: 'create_shipment', arguments: { order_id: 'o-1' } } }, 's-1')).toEqual({
      method: 'tools/call',
      id: 'a-1',
      target: 'create_shipment',
      arguments: { order_id: 'o-1' },
      session: 's-1',
    })
  })

  it('reads the trace context MCP carries in params._meta.traceparent, and only a string', () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    expect(parse({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', _meta: { traceparent } } })?.traceparent).toBe(traceparent)
    expect(parse({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', _meta: { traceparent: 42 } } })).not.toHaveProperty('traceparent')
    expect(parse({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', _meta: null } })).not.toHaveProperty('traceparent')
  })

  it('takes a resource URI as the target and gives a notification a null id', () => {
    expect(parse({ jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'file:///orders.csv' } })?.target).toBe('file:///orders.csv')
    expect(parse({ jsonrpc: '2.0', method: 'notifications/initialized' })).toMatchObject({ id: null, target: null })
  })

  it('returns null for what is not one JSON-RPC 2.0 request: invalid JSON, a batch, a response, version 1, an object id', () => {
    for (const body of ['{', '[{"jsonrpc":"2.0","id":1,"method":"ping"}]', { jsonrpc: '2.0', id: 1, result: {} }, { jsonrpc: '1.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: {}, method: 'ping' }, { jsonrpc: '2.0', id: 1, method: '' }]) {
      expect(parse(body)).toBeNull()
    }
  })
})

describe('mcpRouteName', () => {
  it('joins the method and its target, or gives the method alone', () => {
    expect(mcpRouteName({ method: 'tools/call', target: 'create_shipment' })).toBe('tools/call create_shipment')
    expect(mcpRouteName({ method: 'prompts/get', target: 'summarize' })).toBe('prompts/get summarize')
    expect(mcpRouteName({ method: 'tools/list', target: null })).toBe('tools/list')
  })

  it('leaves the query and fragment out of a resource URI, as HTTP route names leave out the query', () => {
    expect(mcpRouteName({ method: 'resources/read', target: 'https://files.test/orders.csv?sig=abc123#top' })).toBe('resources/read https://files.test/orders.csv')
    expect(mcpRouteName({ method: 'tools/call', target: 'what?' })).toBe('tools/call what?')
  })

  it('cuts a route name at 200 characters', () => {
    expect(mcpRouteName({ method: 'resources/read', target: 'file:///' + 'a'.repeat(300) })).toHaveLength(200)
  })
})
