/**
 * What MCP routing costs (docs/mcp.md): the same JSON-RPC `tools/call` POST through the proxy,
 * sent as a plain JSON POST (not recognised as MCP: streamed, no body read first) and as an MCP
 * client sends it (Accept of both answers: body read first, parsed, named
 * `tools/call create_shipment`, its answer read for the report). Also a GET, which must pay nothing.
 * Rounds alternate between the kinds; medians are reported.
 *
 * `node --import tsx bench/mcp-routing.ts [path/to/bin/toolstorm.js]` runs it against another build.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
// @ts-expect-error autocannon ships no types
import autocannon from 'autocannon'
import { median, startChild, startTs } from './processes.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')

export interface McpRoutingOptions {
  rounds: number
  seconds: number
  connections: number
  /** The CLI to run (default: this checkout's bin/toolstorm.js, which loads dist/). */
  bin?: string
}

const BODY = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_shipment', arguments: { order_id: 'o-1', items: [{ sku: 'sku-1', qty: 2 }] } } })
const KINDS = {
  'GET (no body)': { method: 'GET', headers: {}, body: undefined },
  'POST JSON-RPC, plain head (HTTP route)': { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: BODY },
  'POST JSON-RPC, MCP head (MCP route)': { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: BODY },
} as const

export async function benchMcpRouting(options: McpRoutingOptions): Promise<Record<string, unknown>> {
  const upstream = await startTs('bench/mcp-upstream.ts')
  const proxy = await startChild(process.execPath, [options.bin ?? path.join(ROOT, 'bin/toolstorm.js'), 'proxy', '--target', `http://127.0.0.1:${upstream.firstLine.trim()}`, '--port', '0', '--admin-port', '0'])
  const url = `${/^toolstorm proxy (\S+) /.exec(proxy.firstLine)?.[1] as string}/mcp`
  const samples: Record<string, number[]> = {}
  try {
    // Warm-up, so the first kind measured is not the one that pays for JIT.
    for (const kind of Object.values(KINDS)) await autocannon({ url, connections: options.connections, duration: 1, ...kind })
    for (let round = 0; round < options.rounds; round++) {
      for (const [name, kind] of Object.entries(KINDS)) {
        const result = (await autocannon({ url, connections: options.connections, duration: options.seconds, ...kind })) as { requests: { average: number }; errors: number; non2xx: number }
        if (result.errors || result.non2xx) throw new Error(`${name}: ${result.errors} errors, ${result.non2xx} non-2xx answers`)
        ;(samples[name] ??= []).push(result.requests.average)
      }
    }
  } finally {
    await proxy.stop()
    await upstream.stop()
  }
  const rps = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, Math.round(median(values))]))
  const plain = rps['POST JSON-RPC, plain head (HTTP route)'] as number
  const mcp = rps['POST JSON-RPC, MCP head (MCP route)'] as number
  // Per call at this concurrency: the difference of the mean times per request.
  const costUs = Math.round((1 / mcp - 1 / plain) * 1e6 * 10) / 10
  const table = [
    `| request (c=${options.connections}, ${options.rounds}×${options.seconds}s, medians) | req/s |`,
    '|---|---:|',
    ...Object.entries(rps).map(([name, value]) => `| ${name} | ${value} |`),
    `| MCP routing cost per call (1/mcp − 1/plain) | ${costUs} µs |`,
  ].join('\n')
  return { suite: 'mcp', rps, costUs, table, gates: {} }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const result = await benchMcpRouting({ rounds: 3, seconds: 3, connections: 10, ...(process.argv[2] ? { bin: path.resolve(process.argv[2]) } : {}) })
  console.log(result.table)
}
