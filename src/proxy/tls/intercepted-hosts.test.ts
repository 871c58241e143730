import { describe, expect, it } from 'vitest'
import { createStorm, parseConfig } from '../../create-storm.js'
import type { RouteChecker } from '../../engine/protocol-hooks.js'
import { createInterceptPredicate, interceptScope } from './intercepted-hosts.js'

const routes = {
  openai_chat: 'POST https://api.openai.com/v1/chat/completions',
  openai_models: 'GET https://api.openai.com/v1/models',
  tools_ship: 'POST https://tools.test:8443/ship',
  local_health: 'GET /health',
}

/** The route names the default plug-ins give (MCP's), as a storm's. */
const defaultChecker = createStorm({}).protocol.checkRoute

function scope(rules: Array<{ route: string }>, checkRoute: RouteChecker | undefined = defaultChecker) {
  return interceptScope(parseConfig({ routes, rules: rules.map((r, i) => ({ name: `r${i}`, kind: 'unavailable', ...r })) }), checkRoute)
}

describe('interceptScope', () => {
  it('is empty without rules, so every host is tunnelled', () => {
    expect(scope([])).toEqual({ everyHost: false, hosts: new Set() })
  })

  it('names the hosts of declared routes with an origin', () => {
    expect(scope([{ route: 'openai_chat' }, { route: 'tools_ship' }])).toEqual({ everyHost: false, hosts: new Set(['api.openai.com:443', 'tools.test:8443']) })
  })

  it('follows a glob over declared names with an origin', () => {
    expect(scope([{ route: 'openai_*' }])).toEqual({ everyHost: false, hosts: new Set(['api.openai.com:443']) })
  })

  it.each([['POST /ship'], ['GET /items/*'], ['*'], ['*ship*'], ['POST *'], ['local_health'], ['[A-Z]* /x'], ['P?ST /ship'], ['tools/call create_shipment'], ['tools/*'], ['initialize']])('intercepts every host for the route %j', (route) => {
    expect(scope([{ route }])).toEqual({ everyHost: true })
  })

  it('ignores a literal that names no route and cannot be a default name', () => {
    expect(scope([{ route: 'no_such_route' }])).toEqual({ everyHost: false, hosts: new Set() })
  })

  it('intercepts every host under a call budget, whatever the rules name (a tunnelled call is never counted)', () => {
    expect(interceptScope(parseConfig({ routes, maxCalls: 5 }))).toEqual({ everyHost: true })
    expect(interceptScope(parseConfig({ routes, maxCalls: 5, rules: [{ name: 'a', route: 'openai_chat', kind: 'unavailable' }] }))).toEqual({ everyHost: true })
  })

  it("intercepts every host for a route one of the storm's plug-ins names, and only with that plug-in", () => {
    const rpc: RouteChecker = (route) => (route.startsWith('rpc ') ? null : undefined)
    expect(scope([{ route: 'rpc shipping.Ship/Create' }], rpc)).toEqual({ everyHost: true })
    expect(scope([{ route: 'rpc shipping.Ship/Create' }])).toEqual({ everyHost: false, hosts: new Set() })
    // Without MCP among the plug-ins, an MCP method names nothing a request can be routed by.
    expect(scope([{ route: 'tools/call create_shipment' }], rpc)).toEqual({ everyHost: false, hosts: new Set() })
  })
})

describe('createInterceptPredicate', () => {
  it('follows live rule changes', () => {
    let config = parseConfig({ routes, rules: [{ name: 'a', route: 'openai_chat', kind: 'unavailable' }] })
    const intercepts = createInterceptPredicate(() => config, defaultChecker)
    expect(intercepts('api.openai.com', 443)).toBe(true)
    expect(intercepts('api.openai.com', 8443)).toBe(false)
    expect(intercepts('example.com', 443)).toBe(false)
    config = parseConfig({ routes, rules: [{ name: 'b', route: 'POST /ship', kind: 'unavailable' }] })
    expect(intercepts('example.com', 443)).toBe(true)
  })
})
