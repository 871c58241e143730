/**
 * The examples users copy (docs/examples.md), run with the real packages through the fixture: a
 * Vercel AI SDK agent (`@ai-sdk/openai`, whose default is the Responses API, with its tools from an
 * MCP server through the AI SDK's MCP client) and an OpenAI SDK agent, each recovering from a fault.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createMCPClient } from '@ai-sdk/mcp'
import { createOpenAI } from '@ai-sdk/openai'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { generateText, stepCountIs } from 'ai'
import OpenAI from 'openai'
import { afterAll, beforeAll, describe } from 'vitest'
import { z } from 'zod'
import { expect, test } from '../../src/vitest/index.js'
import { startModelUpstream, WORDS, type ModelUpstream } from '../helpers/model-upstream.js'

let model: ModelUpstream
let tools: http.Server
let toolsUrl = ''
const forecasts: string[] = []
beforeAll(async () => {
  model = await startModelUpstream({ gapMs: 0 })
  // The agent's MCP tool server (stateless Streamable HTTP): the fake model calls get_weather.
  tools = http.createServer(async (req, res) => {
    const server = new McpServer({ name: 'weather', version: '1.0.0' })
    server.registerTool('get_weather', { description: 'The weather in a city', inputSchema: { city: z.string() } }, async ({ city }) => {
      forecasts.push(city)
      return { content: [{ type: 'text', text: `Sunny in ${city}` }] }
    })
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
    res.on('close', () => void server.close())
    await server.connect(transport)
    await transport.handleRequest(req, res)
  })
  await new Promise<void>((resolve) => tools.listen(0, '127.0.0.1', resolve))
  toolsUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}/mcp`
})
afterAll(async () => {
  await model.close()
  await new Promise<void>((resolve) => tools.close(() => resolve()))
})

describe('examples users copy (docs/examples.md)', () => {
  test('an AI SDK agent with MCP tools recovers from a rate-limited model call and a failed tool call', { timeout: 30_000 }, async ({ storm }) => {
    const s = storm({
      rules: [
        { name: 'busy', route: 'POST /v1/responses', kind: 'rate_limit', calls: [1], delay: 0 },
        { name: 'tool-down', route: 'tools/call get_weather', kind: 'tool_error', calls: [1] },
      ],
    })
    // Created after storm(), inside the test: both use the fetch the storm intercepts.
    const mcp = await createMCPClient({ transport: { type: 'http', url: toolsUrl } })
    try {
      const openai = createOpenAI({ baseURL: `${model.url}/v1`, apiKey: 'sk-test' })
      const result = await generateText({ model: openai('gpt-4.1'), tools: await mcp.tools(), prompt: 'Weather in Paris?', stopWhen: stepCountIs(3) })
      expect(result.text).toBe(WORDS.join(''))
      // The tool failed (isError), the model was told, and the agent finished without retrying it.
      expect(forecasts).toEqual([])
    } finally {
      await mcp.close()
    }
    expect(s).toHaveTriggered()
    expect(s).toHaveAtMostCalls(1, { route: 'tools/call get_weather' })
  })

  test('an OpenAI SDK agent retries a rate-limited chat completion once', { timeout: 30_000 }, async ({ storm }) => {
    const s = storm({ rules: [{ name: 'busy', route: 'POST /v1/chat/completions', kind: 'rate_limit', calls: [1], delay: 0 }] })
    const client = new OpenAI({ baseURL: `${model.url}/v1`, apiKey: 'sk-test', maxRetries: 2 })
    const completion = await client.chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'hi' }] })
    expect(completion.choices[0]?.message.content).toBe(WORDS.join(''))
    expect(s).toHaveTriggered('busy')
    expect(s).toHaveAtMostCalls(2, { route: 'POST /v1/chat/completions' })
  })
})
