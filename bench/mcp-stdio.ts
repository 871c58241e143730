/**
 * What `toolstorm mcp` costs a stdio MCP server (docs/mcp.md#stdio-servers-toolstorm-mcp): the
 * official TypeScript SDK client (`StdioClientTransport`) against fixtures/stdio-mcp-server,
 * launched directly and through the wrapper, alternating:
 * - per call: sequential `tools/call count` (an in-memory counter: the server's own work is nil),
 *   the mean time per call of each round, medians over the rounds; the wrapper's added latency is
 *   the difference. Target: ≤ 0.3 ms.
 * - start: from launch until `initialize` is answered (the client connected), medians; the
 *   wrapper's start is the difference. Target: ≤ 300 ms.
 *
 * `node --import tsx bench/mcp-stdio.ts [path/to/bin/toolstorm.js]` runs it against another build.
 */
import { loadavg } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { median } from './processes.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const SERVER = [process.execPath, path.join(ROOT, 'fixtures/stdio-mcp-server/server.mjs')]

export interface McpStdioOptions {
  rounds: number
  calls: number
  starts: number
  bin?: string
}

async function connect(command: string[]): Promise<{ client: Client; startMs: number }> {
  const [file, ...args] = command as [string, ...string[]]
  const started = performance.now()
  const client = new Client({ name: 'bench', version: '1.0.0' })
  await client.connect(new StdioClientTransport({ command: file, args, stderr: 'ignore' }))
  return { client, startMs: performance.now() - started }
}

/** Mean milliseconds per sequential call over `calls` calls. */
async function perCall(client: Client, calls: number): Promise<number> {
  const started = performance.now()
  for (let i = 0; i < calls; i++) await client.callTool({ name: 'count', arguments: {} })
  return (performance.now() - started) / calls
}

export async function benchMcpStdio(options: McpStdioOptions): Promise<Record<string, unknown>> {
  const bin = options.bin ?? path.join(ROOT, 'bin/toolstorm.js')
  const kinds = { direct: SERVER, 'toolstorm mcp': [process.execPath, bin, 'mcp', '--', ...SERVER] }
  const callMs: Record<string, number[]> = {}
  const startMs: Record<string, number[]> = {}
  // The machine is shared: its load says how far these numbers are from a quiet machine's.
  const loadBefore = loadavg()[0] as number
  for (let round = 0; round < Math.max(options.rounds, options.starts); round++) {
    for (const [name, command] of Object.entries(kinds)) {
      const { client, startMs: start } = await connect(command)
      if (round < options.starts) (startMs[name] ??= []).push(start)
      if (round < options.rounds) {
        await perCall(client, Math.min(200, options.calls)) // warm-up: JIT on both sides
        ;(callMs[name] ??= []).push(await perCall(client, options.calls))
      }
      await client.close()
    }
  }
  const calls = Object.fromEntries(Object.entries(callMs).map(([name, values]) => [name, median(values)]))
  const starts = Object.fromEntries(Object.entries(startMs).map(([name, values]) => [name, median(values)]))
  const addedMs = (calls['toolstorm mcp'] as number) - (calls.direct as number)
  const startAddedMs = (starts['toolstorm mcp'] as number) - (starts.direct as number)
  const round3 = (value: number) => Math.round(value * 1000) / 1000
  const load = `load average ${loadBefore.toFixed(1)} before, ${(loadavg()[0] as number).toFixed(1)} after`
  const table = [
    `| stdio MCP server, SDK client (${options.rounds} rounds × ${options.calls} sequential calls; ${options.starts} starts; medians) | per call | start (launch → initialized) |`,
    '|---|---:|---:|',
    ...Object.keys(kinds).map((name) => `| ${name} | ${round3(calls[name] as number)} ms | ${Math.round(starts[name] as number)} ms |`),
    `| added by the wrapper | ${round3(addedMs)} ms | ${Math.round(startAddedMs)} ms |`,
    '',
    `(${load})`,
  ].join('\n')
  return {
    suite: 'mcp-stdio',
    callMs: calls,
    startMs: starts,
    addedMs: round3(addedMs),
    startAddedMs: Math.round(startAddedMs),
    load,
    table,
    gates: { 'added latency per call ≤ 0.3 ms': addedMs <= 0.3, 'wrapper start ≤ 300 ms beyond the server\'s': startAddedMs <= 300 },
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const result = await benchMcpStdio({ rounds: 5, calls: 2_000, starts: 10, ...(process.argv[2] ? { bin: path.resolve(process.argv[2]) } : {}) })
  console.log(result.table)
}
