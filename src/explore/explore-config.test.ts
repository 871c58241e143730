import { describe, expect, it } from 'vitest'
import { faultsForRoute, parseExploreConfig } from './explore-config.js'
import { faultsFor } from './fault-catalogue.js'
import type { CallKind } from './call-sites.js'

const READ: CallKind = { method: 'GET', write: false, json: true, stream: false, events: 0, model: null, mcp: null }

describe('the explore config', () => {
  it('replaces the table, sets faults per route glob (first match wins) and skips routes', () => {
    const config = parseExploreConfig({ version: 1, faults: ['timeout', { name: 'slow', kind: 'latency', delay: 5 }], routes: { 'GET /health': { skip: true }, 'GET *': { faults: ['slow'] } } }, 'explore.yaml')
    expect(config.faults.map((fault) => [fault.name, fault.rule])).toEqual([['timeout', { kind: 'timeout' }], ['slow', { kind: 'latency', delay: 5 }]])
    expect(faultsForRoute(config, 'GET /health')).toBeNull()
    expect(faultsForRoute(config, 'GET /items')?.map((fault) => fault.name)).toEqual(['slow'])
    expect(faultsForRoute(config, 'POST /items')?.map((fault) => fault.name)).toEqual(['timeout', 'slow'])
  })

  it('names the file and the field of what is wrong', () => {
    expect(() => parseExploreConfig({ faults: [{ name: 'slow', kind: 'latency', delay: -1 }] }, 'e.yaml')).toThrow('Failed to read e.yaml $.faults[0] ("slow"): $.delay: expected a finite nonnegative number of seconds.')
    expect(() => parseExploreConfig({ faults: [{ name: 'x', kind: 'timeout', calls: [2] }] }, 'e.yaml')).toThrow('"calls" is explore\'s to set')
    expect(() => parseExploreConfig({ faults: ['timeout', { name: 'timeout', kind: 'reset' }] }, 'e.yaml')).toThrow('two faults are named "timeout"')
    expect(() => parseExploreConfig({ version: 2 }, 'e.yaml')).toThrow('Failed to read the explore config e.yaml: $.version: expected explore config version 1')
    expect(() => parseExploreConfig({ routes: { 'POST /x': { faults: ['respons_lost'] } } }, 'e.yaml')).toThrow('unknown fault "respons_lost". Did you mean "response_lost"?')
  })

  it('tries on a call only the faults its kind can have', () => {
    const config = parseExploreConfig({}, 'default')
    expect(faultsFor(READ, config.faults).map((fault) => fault.name)).toEqual(['timeout', 'rate_limit', 'unavailable', 'reset', 'latency', 'schema_drift'])
    const stream: CallKind = { ...READ, method: 'POST', json: false, stream: true, events: 7, model: { api: 'messages', provider: 'anthropic', streamed: true, deltas: ['tool_arguments'] } }
    expect(faultsFor(stream, config.faults).map((fault) => fault.name)).toEqual(['timeout', 'rate_limit', 'unavailable', 'reset', 'latency', 'overloaded', 'stream_cut@tool_arguments', 'stream_stall', 'drop_terminal'])
    const mcpAnswer: CallKind = { ...READ, method: 'POST', write: true, json: false, stream: true, events: 1, mcp: { method: 'tools/call', tool: 'ship', id: true, session: false } }
    expect(faultsFor(mcpAnswer, config.faults).map((fault) => fault.name)).toEqual(['timeout', 'rate_limit', 'unavailable', 'reset', 'latency', 'response_lost', 'tool_error', 'rpc_error'])
  })
})
