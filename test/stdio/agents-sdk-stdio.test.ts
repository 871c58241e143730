/**
 * An agent framework over stdio under a fault: the OpenAI Agents SDK for TypeScript
 * (`@openai/agents` 0.20, whose `MCPServerStdio` is `@modelcontextprotocol/client` 2.4's stdio
 * client) runs an agent whose model is a fake chat-completions server this test starts on
 * 127.0.0.1. The model calls `create_note` (fixtures/stdio-mcp-server, through `toolstorm mcp`),
 * then answers with what the tool result said, so the test sees what the agent was told.
 * docs/mcp.md's table of faults over stdio has a column for what these tests measure.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { Agent, MCPServerStdio, OpenAIProvider, Runner, setTracingDisabled } from '@openai/agents'
import type { Report } from '../../src/engine/schema/report.js'
import { closingServer, temporaryFolder } from '../helpers/teardown.js'
import { NOTES_SERVER, readJson, wrappedCommand } from '../helpers/stdio-mcp.js'

// The SDK would export traces to OpenAI's servers.
setTracingDisabled(true)

interface FakeModel {
  readonly baseURL: string
  /** What each request's last message said (`tool: …` for a tool result). */
  readonly heard: string[]
}

/** A chat-completions model: calls create_note({key: "order-1"}) first, then answers "the tool said: <its result>". */
async function fakeModel(): Promise<FakeModel> {
  const heard: string[] = []
  const server = closingServer(
    http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (chunk: Buffer) => chunks.push(chunk))
      req.on('end', () => {
        const request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messages: Array<{ role: string; content: unknown }> }
        const last = request.messages.at(-1)!
        heard.push(`${last.role}: ${String(last.content)}`)
        const message =
          last.role === 'tool'
            ? { role: 'assistant', content: `the tool said: ${String(last.content)}` }
            : { role: 'assistant', content: null, tool_calls: [{ id: `call_${heard.length}`, type: 'function', function: { name: 'create_note', arguments: '{"key":"order-1"}' } }] }
        const body = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: 'gpt-test', choices: [{ index: 0, message, finish_reason: last.role === 'tool' ? 'stop' : 'tool_calls' }], usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } })
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
        res.end(body)
      })
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, heard }
}

interface AgentRun {
  /** The agent's final output, or the error the run threw. */
  readonly output: string | null
  readonly threw: string | null
  readonly heard: string[]
  readonly notes: string
  readonly report: Report
}

/** One agent run with `rule` on `tools/call create_note` #1, the MCP server through toolstorm mcp. */
async function agentRun(rule: Record<string, unknown>, options: { wrapper?: string[]; server?: { cacheToolsList?: boolean; clientSessionTimeoutSeconds?: number } } = {}): Promise<AgentRun> {
  const folder = await temporaryFolder('toolstorm-agents-')
  const rules = path.join(folder, 'rules.json')
  const report = path.join(folder, 'report.json')
  const notes = path.join(folder, 'notes.txt')
  await writeFile(rules, JSON.stringify({ seed: 1, rules: [{ name: 'fault', route: 'tools/call create_note', calls: [1], ...rule }] }))
  await writeFile(notes, '')
  const [command, ...args] = wrappedCommand(NOTES_SERVER, ['--rules', rules, '--report', report, ...(options.wrapper ?? [])]) as [string, ...string[]]
  const model = await fakeModel()
  const mcp = new MCPServerStdio({ command, args, env: { ...(process.env as Record<string, string>), NOTES_FILE: notes }, ...options.server })
  await mcp.connect()
  const agent = new Agent({ name: 'note-taker', instructions: 'Take the note the user asks for.', model: 'gpt-test', mcpServers: [mcp] })
  const runner = new Runner({ modelProvider: new OpenAIProvider({ apiKey: 'sk-test', baseURL: model.baseURL, useResponses: false }) })
  let output: string | null = null
  let threw: string | null = null
  try {
    output = String((await runner.run(agent, 'Note order-1.')).finalOutput)
  } catch (error) {
    threw = (error as Error).message
  }
  await mcp.close()
  return { output, threw, heard: model.heard, notes: await readFile(notes, 'utf8'), report: await readJson<Report>(report) }
}

const GENERIC = 'An error occurred while running the tool. Please try again.'

describe('the OpenAI Agents SDK (TypeScript) over stdio through toolstorm mcp', () => {
  it('tool_error: the model is given the error message as the tool\'s output (not told it is an error), and nothing is committed', async () => {
    const run = await agentRun({ kind: 'tool_error', message: 'disk on fire' })
    expect(run.output).toBe('the tool said: disk on fire')
    expect(run.heard.at(-1)).toBe('tool: disk on fire')
    expect(run.notes).toBe('')
    expect(run.report.calls.find((call) => call.route === 'tools/call create_note')).toMatchObject({ injected: true, executed: false, mcp: { outcome: 'isError' } })
  })

  it('timeout: the SDK turns the -32001 into a generic tool output, and the run goes on to a final answer', async () => {
    const run = await agentRun({ kind: 'timeout', delay: 0.2 })
    expect(run.output).toBe(`the tool said: ${GENERIC}`)
    expect(run.notes).toBe('')
    expect(run.report.calls.find((call) => call.route === 'tools/call create_note')).toMatchObject({ injected: true, executed: false, mcp: { outcome: 'error', errorCode: -32001 } })
  })

  it('response_lost: the note is committed, the connection ends, and the run throws "Not connected" when the next turn lists the tools again (the SDK never relaunches a stdio server)', async () => {
    const run = await agentRun({ kind: 'response_lost' })
    expect(run.threw).toBe('Not connected')
    expect(run.output).toBeNull()
    // The model was asked once: the run ended before it heard of the tool's failure.
    expect(run.heard).toEqual(['user: Note order-1.'])
    expect(run.notes).toBe('order-1\n')
    expect(run.report.effects.map((effect) => [effect.name, effect.key])).toEqual([['note', 'order-1']])
    expect(run.report.calls.find((call) => call.route === 'tools/call create_note')).toMatchObject({ injected: true, executed: true, outcome: 'reset' })
  })

  it('response_lost with cacheToolsList: the model is told the generic error while the note was committed (a retry would commit it twice)', async () => {
    const run = await agentRun({ kind: 'response_lost' }, { server: { cacheToolsList: true } })
    expect(run.output).toBe(`the tool said: ${GENERIC}`)
    expect(run.heard.at(-1)).toBe(`tool: ${GENERIC}`)
    expect(run.notes).toBe('order-1\n')
    expect(run.report.effects.map((effect) => [effect.name, effect.key])).toEqual([['note', 'order-1']])
  })
})
