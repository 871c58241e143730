import { describe, expect, it } from 'vitest'
import { parseConfig } from '../engine/storm.js'
import { formatRuleWarning, lintRules, ruleNotes } from './lint-rules.js'

const routes = { create_shipment: 'POST /shipments', check_inventory: 'GET /inventory/:sku' }
const config = (rules: string[]) => parseConfig({ routes, rules: rules.map((route, i) => ({ name: `r${i}`, route, kind: 'reset' })) })
/** With no plug-in: only declared routes and `METHOD /path` names. */
const lint = (...rules: string[]) => lintRules(config(rules), []).map(formatRuleWarning)
/** With the default plug-ins' route checkers (MCP's, src/mcp/mcp-methods.ts), as the CLI lints. */
const lintWithMcp = (...rules: string[]) => lintRules(config(rules)).map(formatRuleWarning)

describe('lintRules', () => {
  it('names the declared route closest to a misspelled one', () => {
    expect(lint('create_shipmnt')).toEqual(['rule "r0": route "create_shipmnt" is not a declared route, nor "METHOD /path", so the rule can never fire. Did you mean "create_shipment"?'])
  })

  it('says methods are upper case in route names', () => {
    expect(lint('post /orders')).toEqual(['rule "r0": route "post /orders" can never match: route names carry the method in upper case, and globs are case-sensitive. Did you mean "POST /orders"?'])
    expect(lint('post /shipments')[0]).toContain('Did you mean "create_shipment"?')
  })

  it('says route names carry no query string, where "?" would stand for one character', () => {
    expect(lint('POST /orders?dry_run=1', 'GET /inventory/*?sku=1&x=2')).toEqual([
      'rule "r0": route "POST /orders?dry_run=1" can never match: route names carry no query string, and "?" in a glob stands for one character. Did you mean "POST /orders"?',
      'rule "r1": route "GET /inventory/*?sku=1&x=2" can never match: route names carry no query string, and "?" in a glob stands for one character. Did you mean "GET /inventory/*"?',
    ])
    // A "?" wildcard with no query after it is a glob like any other.
    expect(lint('GET /item?', 'GET /v?/items')).toEqual([])
  })

  it('points a path without a method at the declared route that serves it, else at the METHOD /path shape', () => {
    expect(lint('/shipments', '/orders')).toEqual([
      'rule "r0": route "/shipments" can never match: a route name is a declared route or "METHOD /path", with the method. Did you mean "create_shipment" (POST /shipments)?',
      'rule "r1": route "/orders" can never match: a route name is a declared route or "METHOD /path", with the method. Did you mean "POST /orders", or "* /orders" for any method?',
    ])
  })

  it('does not warn about a METHOD /path rule on a declared route: it fires by the path (#29)', () => {
    expect(lint('POST /shipments', 'GET /inventory/*')).toEqual([])
  })

  it('notes the declared routes a glob matches by path only, naming them', () => {
    const notes = ruleNotes(parseConfig({ routes, rules: [{ name: 'busy', route: 'GET /inventory/*', kind: 'reset' }, { name: 'by-name', route: 'check_*', kind: 'reset' }, { name: 'other', route: 'GET /orders/*', kind: 'reset' }] })).map(formatRuleWarning)
    expect(notes).toEqual(['rule "busy": route "GET /inventory/*" matches the requests of "check_inventory" (GET /inventory/:sku) by their path: those calls are named after the declared route, and "calls" counts its ordinals.'])
  })

  it('refuses origins, extra spaces and relative paths in route names', () => {
    const [origin, spaces, relative] = lint('GET https://api.test/x', 'POST  /orders', 'POST orders')
    expect(origin).toContain('can never match: route names carry no origin. Declare the route in "routes" (origins are allowed there) and use its name.')
    expect(spaces).toContain('can never match: a route name has one space between the method and the path. Did you mean "POST /orders"?')
    expect(relative).toContain('can never match: the path of a route name starts with "/". Did you mean "POST /orders"?')
  })

  it('lists the declared routes when nothing is close', () => {
    expect(lint('frobnicate')).toEqual(['rule "r0": route "frobnicate" can never match: it is not a declared route (declared routes: create_shipment, check_inventory), nor "METHOD /path" (for example "POST /shipments").'])
  })

  it('accepts every route that some request can be named', () => {
    expect(lint('create_shipment', 'create_*', 'GET /inventory/*', '* /orders', 'POST /orders', '*', '*shipments', 'GET /health', '[GP]* /x')).toEqual([])
  })

  it('accepts a plug-in\'s route names and globs (MCP), and names the MCP method closest to a misspelled one', () => {
    expect(lintWithMcp('tools/call create_shipment', 'tools/call create_*', 'tools/*', 'initialize', 'resources/read file:///orders.csv', 'x-vendor/sync')).toEqual([])
    expect(lint('tools/call create_shipment')).toHaveLength(1)
    expect(lintWithMcp('tools/cal create_shipment', 'initialise')).toEqual([
      'rule "r0": route "tools/cal create_shipment" can never match: "tools/cal" is not an MCP method. Did you mean "tools/call create_shipment"?',
      'rule "r1": route "initialise" can never match: "initialise" is not an MCP method. Did you mean "initialize"?',
    ])
  })
})
