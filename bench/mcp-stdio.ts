/**
 * What `toolstorm mcp` costs a stdio MCP server (docs/mcp.md#stdio-servers-toolstorm-mcp): the
 * official TypeScript SDK client (`StdioClientTransport`) against fixtures/stdio-mcp-server,
 * launched directly and through the wrapper, alternating:
 * - per call: sequential `tools/call count` (an in-memory counter: the server's own work is nil),
 *   the mean time per call of each round, medians over the rounds; the wrapper's added latency is
 *   the difference. Target: ≤ 0.3 ms, in the steady state of a session (each launch makes 200
 *   calls to warm up, then `calls` shown as "the first", then `calls` measured): V8 optimises the
 *   wrapper's hot paths over its first few thousand calls, and an agent's session lasts longer.
 * - start: from launch until `initialize` is answered (the client connected), medians; the
 *   wrapper's start is the difference. Target: ≤ 300 ms.
 *
 * - CPU per call: user + system time of the launched process (the server directly; else the
 *   relay or the wrapper alone, not the server behind it), from /proc: what the machine's load
 *   inflates least, so builds compare on a busy machine too.
 * - the relay floor: a bare Node process that pipes both ways and parses nothing
 *   (bench/peers/stdio-relay.mjs): how much of the wrapper's cost is the extra process hop itself.
 *
 * `node --import tsx bench/mcp-stdio.ts [path/to/bin/toolstorm.js] [--against other/bin/toolstorm.js] [--quick]`
 * runs it against another build, or measures two builds in the same alternated rounds.
 */
import { readFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { median } from './processes.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const SERVER = [process.execPath, path.join(ROOT, 'fixtures/stdio-mcp-server/server.mjs')]
/** The floor: a bare Node process that pipes both ways and parses nothing (the extra process hop alone). */
const RELAY = [process.execPath, path.join(ROOT, 'bench/peers/stdio-relay.mjs')]

export interface McpStdioOptions {
  rounds: number
  calls: number
  starts: number
  bin?: string
  /** Another build's bin/toolstorm.js, measured in the same rounds (A/B alternated). */
  against?: string
}

async function connect(command: string[]): Promise<{ client: Client; startMs: number; pid: number | null }> {
  const [file, ...args] = command as [string, ...string[]]
  const started = performance.now()
  const client = new Client({ name: 'bench', version: '1.0.0' })
  const transport = new StdioClientTransport({ command: file, args, stderr: 'ignore' })
  await client.connect(transport)
  return { client, startMs: performance.now() - started, pid: transport.pid }
}

/**
 * CPU seconds (user + system) the process `pid` used so far (Linux /proc; null elsewhere): the
 * launched process's own work, which the machine's load does not inflate as it does wall time.
 */
async function cpuSeconds(pid: number | null): Promise<number | null> {
  if (pid === null) return null
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) / 100 // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return null
  }
}

/** Mean milliseconds per sequential call over `calls` calls. */
async function perCall(client: Client, calls: number): Promise<number> {
  const started = performance.now()
  for (let i = 0; i < calls; i++) await client.callTool({ name: 'count', arguments: {} })
  return (performance.now() - started) / calls
}

export async function benchMcpStdio(options: McpStdioOptions): Promise<Record<string, unknown>> {
  const bin = options.bin ?? path.join(ROOT, 'bin/toolstorm.js')
  const kinds: Record<string, string[]> = { direct: SERVER, 'relay floor (pipes only)': [...RELAY, ...SERVER], 'toolstorm mcp': [process.execPath, bin, 'mcp', '--', ...SERVER] }
  if (options.against) kinds['toolstorm mcp (other build)'] = [process.execPath, options.against, 'mcp', '--', ...SERVER]
  const callMs: Record<string, number[]> = {}
  /** The first `calls` after the 200 of warm-up, before V8 has optimised the hot paths (the wrapper has more of them than the server). */
  const earlyMs: Record<string, number[]> = {}
  const startMs: Record<string, number[]> = {}
  const cpuUs: Record<string, number[]> = {}
  // The machine is shared: its load says how far these numbers are from a quiet machine's.
  const loadBefore = loadavg()[0] as number
  for (let round = 0; round < Math.max(options.rounds, options.starts); round++) {
    // The order turns every round: no kind always runs right after another.
    const order = Object.entries(kinds)
    for (let turn = 0; turn < round % order.length; turn++) order.push(order.shift()!)
    for (const [name, command] of order) {
      const { client, startMs: start, pid } = await connect(command)
      if (round < options.starts) (startMs[name] ??= []).push(start)
      if (round < options.rounds) {
        await perCall(client, Math.min(200, options.calls)) // warm-up: JIT on both sides
        ;(earlyMs[name] ??= []).push(await perCall(client, options.calls))
        // Then the steady state a long session runs in (what the per-call gate is about): the same number of calls again.
        const cpuBefore = await cpuSeconds(pid)
        ;(callMs[name] ??= []).push(await perCall(client, options.calls))
        const cpuAfter = await cpuSeconds(pid)
        if (cpuBefore !== null && cpuAfter !== null) (cpuUs[name] ??= []).push(((cpuAfter - cpuBefore) * 1e6) / options.calls)
      }
      await client.close()
    }
  }
  const calls = Object.fromEntries(Object.entries(callMs).map(([name, values]) => [name, median(values)]))
  const early = Object.fromEntries(Object.entries(earlyMs).map(([name, values]) => [name, median(values)]))
  const earlyAddedMs = (early['toolstorm mcp'] as number) - (early.direct as number)
  const starts = Object.fromEntries(Object.entries(startMs).map(([name, values]) => [name, median(values)]))
  const cpu = Object.fromEntries(Object.entries(cpuUs).map(([name, values]) => [name, median(values)]))
  const addedMs = (calls['toolstorm mcp'] as number) - (calls.direct as number)
  const startAddedMs = (starts['toolstorm mcp'] as number) - (starts.direct as number)
  const floorMs = (calls['relay floor (pipes only)'] as number) - (calls.direct as number)
  const otherMs = options.against ? (calls['toolstorm mcp (other build)'] as number) - (calls.direct as number) : null
  const round3 = (value: number) => Math.round(value * 1000) / 1000
  const load = `load average ${loadBefore.toFixed(1)} before, ${(loadavg()[0] as number).toFixed(1)} after`
  const table = [
    `| stdio MCP server, SDK client (${options.rounds} rounds × ${options.calls} sequential calls after ${options.calls + 200}; ${options.starts} starts; medians) | per call | per call, the first ${options.calls} | start (launch → initialized) | CPU per call of the launched process |`,
    '|---|---:|---:|---:|---:|',
    ...Object.keys(kinds).map((name) => `| ${name} | ${round3(calls[name] as number)} ms | ${round3(early[name] as number)} ms | ${Math.round(starts[name] as number)} ms | ${cpu[name] === undefined ? 'n/a' : `${Math.round(cpu[name] as number)} µs`} |`),
    `| added by the wrapper | ${round3(addedMs)} ms | ${round3(earlyAddedMs)} ms | ${Math.round(startAddedMs)} ms | |`,
    `| added by the relay floor (the process hop alone) | ${round3(floorMs)} ms | ${round3((early['relay floor (pipes only)'] as number) - (early.direct as number))} ms | | |`,
    ...(otherMs === null ? [] : [`| added by the other build | ${round3(otherMs)} ms | ${round3((early['toolstorm mcp (other build)'] as number) - (early.direct as number))} ms | | |`]),
    '',
    `(${load})`,
  ].join('\n')
  return {
    suite: 'mcp-stdio',
    callMs: calls,
    startMs: starts,
    cpuUsPerCall: cpu,
    addedMs: round3(addedMs),
    earlyCallMs: early,
    earlyAddedMs: round3(earlyAddedMs),
    floorAddedMs: round3(floorMs),
    ...(otherMs === null ? {} : { otherAddedMs: round3(otherMs) }),
    startAddedMs: Math.round(startAddedMs),
    load,
    table,
    gates: { 'added latency per call ≤ 0.3 ms': addedMs <= 0.3, 'wrapper start ≤ 300 ms beyond the server\'s': startAddedMs <= 300 },
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  // [bin] [--against other/bin/toolstorm.js] [--quick]
  const argv = process.argv.slice(2)
  const at = argv.indexOf('--against')
  const against = at >= 0 ? argv[at + 1] : undefined
  const bin = argv.find((arg, index) => !arg.startsWith('--') && (at < 0 || index !== at + 1))
  const sizes = argv.includes('--quick') ? { rounds: 2, calls: 500, starts: 3 } : { rounds: 5, calls: 2_000, starts: 10 }
  const result = await benchMcpStdio({ ...sizes, ...(bin ? { bin: path.resolve(bin) } : {}), ...(against ? { against: path.resolve(against) } : {}) })
  console.log(result.table)
}
