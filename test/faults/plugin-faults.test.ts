/**
 * Faults come from plug-ins: the kernel brings its own kinds, each plug-in its own
 * (`ExchangePlugin.faults`), and a proxy's rules may use exactly the kinds its plug-ins bring.
 * The default list still knows every kind it knew (MCP's and the model providers' included).
 * (The vitest fixture takes its plug-ins' kinds as the proxy does.)
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import { ConfigError } from '../../src/errors.js'
import { defineFault } from '../../src/engine/faults/fault.js'
import type { ExchangePlugin } from '../../src/engine/plugin.js'
import { defaultPlugins } from '../../src/default-plugins.js'
import { defaultFaults, faultRegistryOf } from '../../src/default-faults.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { startUpstream } from '../helpers/upstream.js'
import { test } from '../../src/vitest/index.js'

/** A plug-in bringing one fault: `418 I'm a teapot` before the upstream is asked. */
const teapot: ExchangePlugin = {
  name: 'teapot',
  faults: [
    defineFault({
      type: 'teapot',
      phase: 'before-upstream',
      params: {},
      explain: () => "answer 418 I'm a teapot",
      apply: async () => ({ action: { type: 'respond', status: 418, headers: { 'content-type': 'text/plain' }, body: new TextEncoder().encode('short and stout') }, injected: true }),
    }),
  ],
}

const RULES = { rules: [{ name: 'brew', route: 'GET /**', kind: 'teapot' }] }

describe('faults from plug-ins', () => {
  it('are served by a proxy given the plug-in, and counted as injected', async () => {
    const upstream = await startUpstream()
    onTestFinished(() => upstream.close())
    const proxy = await startProxy({ targets: [upstream.url], config: RULES, plugins: [...defaultPlugins(), teapot] })
    onTestFinished(() => proxy.close())
    const response = await fetch(`${proxy.url}/pot`)
    expect([response.status, await response.text()]).toEqual([418, 'short and stout'])
    const call = proxy.storm.report().calls[0]
    expect([call?.kind, call?.injected, call?.executed]).toEqual(['teapot', true, false])
  })

  test('are served in-process by the vitest fixture given the plug-in', async ({ storm }) => {
    const upstream = await startUpstream()
    onTestFinished(() => upstream.close())
    const s = storm(RULES, { plugins: [...defaultPlugins(), teapot] })
    const response = await fetch(`${upstream.url}/pot`)
    expect([response.status, await response.text()]).toEqual([418, 'short and stout'])
    expect(s.report().calls.map((call) => [call.kind, call.injected])).toEqual([['teapot', true]])
  })

  it('are refused, naming the kinds there are, by a proxy without the plug-in', async () => {
    await expect(startProxy({ config: RULES })).rejects.toThrow(ConfigError)
    await expect(startProxy({ config: RULES })).rejects.toThrow(/\$\.rules\[0\]\.kind: expected "kind" to be one of "timeout", .*"tool_error", .*"token_limit"/)
  })

  it('make the default registry: the kernel kinds, then those the default plug-ins bring', () => {
    expect(faultRegistryOf(defaultPlugins()).kinds).toEqual(defaultFaults.kinds)
    expect(defaultFaults.kinds).toEqual(expect.arrayContaining(['tool_error', 'rpc_error', 'session_expired', 'crash', 'protocol_error', 'overloaded', 'token_limit', 'duplicate_event', 'drop_usage', 'stream_cut']))
    expect(defaultFaults.kinds).toHaveLength(22)
  })
})
