/**
 * Stream faults that understand a model stream's events (#26): `at: tool_arguments | text` on
 * stream_cut and stream_stall, duplicate_event and drop_usage, in the three wire formats (OpenAI
 * chat, OpenAI Responses, Anthropic Messages), seen through the official SDKs (openai 6.49.0,
 * @anthropic-ai/sdk 1.14.0) in-process and through the proxy in both modes.
 */
import Anthropic from '@anthropic-ai/sdk'
import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { drain } from '../helpers/drain.js'
import { contract } from '../../src/contracts/contract.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { modelScenarios, MESSAGES, RESPONSES, CHAT, type ModelScenario } from '../helpers/model-scenario.js'
import { TRANSPORTS, type Transport } from '../helpers/transports.js'
import { TOOL, TOOL_ARGUMENTS, USAGE, WORDS } from '../helpers/model-upstream.js'

const scenarios = modelScenarios()
let scenario: ModelScenario | null = null

const messages = [{ role: 'user' as const, content: 'Weather in Paris?' }]
const chatTools = [{ type: 'function' as const, function: { name: TOOL.name, parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]
const responseTools = [{ type: 'function' as const, name: TOOL.name, strict: false, parameters: { type: 'object', properties: { city: { type: 'string' } } } }]
const claudeTools = [{ name: TOOL.name, input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } }]
const claude = { model: 'claude-x', max_tokens: 64, messages }

async function openai(transport: Transport, config: StormConfigInput) {
  scenario = await scenarios.start(transport, config, { gapMs: 5 })
  return new OpenAI({ apiKey: 'sk-test', baseURL: `${scenario.base}/v1`, maxRetries: 0, timeout: 5_000, fetchOptions: scenario.fetchOptions as never })
}

async function anthropic(transport: Transport, config: StormConfigInput) {
  scenario = await scenarios.start(transport, config, { gapMs: 5 })
  return new Anthropic({ apiKey: 'sk-ant-test', baseURL: scenario.base, maxRetries: 0, timeout: 5_000, fetchOptions: scenario.fetchOptions as never })
}


type ChatChunk = OpenAI.Chat.Completions.ChatCompletionChunk
const chatArguments = (chunks: ChatChunk[]) => chunks.map((chunk) => chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '').join('')
const chatText = (chunks: ChatChunk[]) => chunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('')

for (const transport of TRANSPORTS) {
  describe(`stream faults inside a model stream's events (${transport})`, () => {
    it('cuts an OpenAI chat stream inside the tool call\'s arguments: the SDK holds half a JSON object, then "terminated"', async () => {
      const client = await openai(transport, { rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', at: 'tool_arguments', after: 1 }] })
      const { items, error } = await drain(await client.chat.completions.create({ model: 'gpt-x', messages, tools: chatTools, stream: true }))
      expect(chatArguments(items)).toBe(TOOL.arguments[0])
      expect(() => JSON.parse(chatArguments(items)) as unknown).toThrow(SyntaxError)
      expect(error).toBeInstanceOf(TypeError)
      expect(error?.message).toBe('terminated')
      const call = (await scenario!.settled()).calls[0]
      expect(call).toMatchObject({ injected: true, outcome: 'error', error: 'STREAM_CUT', cut: { events: 2, at: 'tool_arguments', deltas: 1 } })
    })

    it('cuts an OpenAI chat stream inside the arguments by default (`at: tool_arguments`, no `after`): after the first non-empty piece (#36 item 8)', async () => {
      const client = await openai(transport, { rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', at: 'tool_arguments' }] })
      const { items, error } = await drain(await client.chat.completions.create({ model: 'gpt-x', messages, tools: chatTools, stream: true }))
      // The first chunk names the tool with `arguments: ''`; the client holds the first real piece of the JSON.
      expect(chatArguments(items)).toBe(TOOL.arguments[0])
      expect(error?.message).toBe('terminated')
      expect((await scenario!.settled()).calls[0]).toMatchObject({ injected: true, error: 'STREAM_CUT', cut: { events: 2, at: 'tool_arguments', deltas: 1 } })
    })

    it('cuts an Anthropic stream inside the tool_use input by default (`at: tool_arguments`, no `after`) (#36 item 8)', async () => {
      const client = await anthropic(transport, { rules: [{ name: 'cut', route: MESSAGES, kind: 'stream_cut', at: 'tool_arguments' }] })
      const stream = client.messages.stream({ ...claude, tools: claudeTools })
      const partial: string[] = []
      stream.on('inputJson', (delta) => partial.push(delta))
      const error = await stream.finalMessage().catch((e: Error) => e)
      expect(partial).toEqual([TOOL.arguments[0]])
      expect((error as Error).message).toBe('terminated')
      expect((await scenario!.settled()).calls[0]).toMatchObject({ injected: true, error: 'STREAM_CUT', cut: { events: 3, at: 'tool_arguments', deltas: 1 } })
    })

    it('cuts an OpenAI Responses stream inside the function call\'s arguments: the stream helper rejects with "terminated"', async () => {
      const client = await openai(transport, { rules: [{ name: 'cut', route: RESPONSES, kind: 'stream_cut', at: 'tool_arguments', after: 2 }] })
      const stream = client.responses.stream({ model: 'gpt-r', input: 'Weather in Paris?', tools: responseTools })
      const deltas: string[] = []
      stream.on('response.function_call_arguments.delta', (event) => deltas.push(event.delta))
      const error = await stream.finalResponse().catch((e: Error) => e)
      expect(deltas.join('')).toBe(TOOL.arguments.slice(0, 2).join(''))
      expect(error).toBeInstanceOf(OpenAI.OpenAIError)
      expect((error as Error).message).toBe('terminated')
      expect((await scenario!.settled()).calls[0]).toMatchObject({ injected: true, cut: { events: 5, at: 'tool_arguments', deltas: 2 } })
    })

    it('cuts an Anthropic stream inside the tool_use input: the helper rejects with "terminated" after the partial JSON', async () => {
      const client = await anthropic(transport, { rules: [{ name: 'cut', route: MESSAGES, kind: 'stream_cut', at: 'tool_arguments', after: 2 }] })
      const stream = client.messages.stream({ ...claude, tools: claudeTools })
      const partial: string[] = []
      stream.on('inputJson', (delta) => partial.push(delta))
      const error = await stream.finalMessage().catch((e: Error) => e)
      expect(partial.join('')).toBe(TOOL.arguments.slice(0, 2).join(''))
      expect(error).toBeInstanceOf(Anthropic.AnthropicError)
      expect((error as Error).message).toBe('terminated')
      const call = (await scenario!.settled()).calls[0]
      expect(call).toMatchObject({ injected: true, error: 'STREAM_CUT', cut: { events: 4, at: 'tool_arguments', deltas: 2 } })
    })

    it('stalls an OpenAI chat stream after its second text delta for `delay` seconds, then closes it', async () => {
      const client = await openai(transport, { rules: [{ name: 'stall', route: CHAT, kind: 'stream_stall', at: 'text', after: 2, delay: 0.4 }] })
      const started = performance.now()
      const { items, error } = await drain(await client.chat.completions.create({ model: 'gpt-x', messages, stream: true }))
      expect(chatText(items)).toBe(WORDS.slice(0, 2).join(''))
      expect(error?.message).toBe('terminated')
      expect(performance.now() - started).toBeGreaterThanOrEqual(380)
      expect((await scenario!.settled()).calls[0]).toMatchObject({ injected: true, outcome: 'error', cut: { at: 'text', deltas: 2 } })
    })

    it('does not fire `at: tool_arguments` on an answer without a tool call, and the coverage and contract say why', async () => {
      const client = await openai(transport, { rules: [{ name: 'cut-args', route: CHAT, kind: 'stream_cut', at: 'tool_arguments' }] })
      const { items, error } = await drain(await client.chat.completions.create({ model: 'gpt-x', messages, stream: true }))
      expect([chatText(items), error]).toEqual([WORDS.join(''), null])
      const report = await scenario!.settled()
      expect(report.calls[0]).toMatchObject({ fault: 'cut-args', injected: false, outcome: 'response', notFired: 'at: tool_arguments: the stream had no tool-call argument deltas' })
      expect(report.calls[0]?.cut ?? null).toBeNull()
      expect(report.coverage['cut-args']).toEqual({ eligible: 1, selected: 1, triggered: 0 })
      const [result] = contract(report).requireTriggered('cut-args').checks
      expect(result).toMatchObject({ passed: false, detail: 'Triggered 0 time(s); selected 1 time(s), and it did not act: at: tool_arguments: the stream had no tool-call argument deltas' })
    })

    it('sends the first text delta of an OpenAI chat stream twice: the SDK\'s text holds the word doubled', async () => {
      const client = await openai(transport, { rules: [{ name: 'dup', route: CHAT, kind: 'duplicate_event' }] })
      const { items, error } = await drain(await client.chat.completions.create({ model: 'gpt-x', messages, stream: true }))
      expect([chatText(items), error]).toEqual([WORDS[0] + WORDS.join(''), null])
      const call = (await scenario!.settled()).calls[0]
      expect([call?.injected, call?.outcome, call?.cut ?? null]).toEqual([true, 'response', null])
    })

    it('sends an Anthropic input_json_delta twice: the SDK\'s stream helper fails to parse the doubled tool input', async () => {
      const client = await anthropic(transport, { rules: [{ name: 'dup', route: MESSAGES, kind: 'duplicate_event', at: 'tool_arguments', after: 1 }] })
      const stream = client.messages.stream({ ...claude, tools: claudeTools })
      const partial: string[] = []
      stream.on('inputJson', (delta) => partial.push(delta))
      const result = await stream.finalMessage().catch((e: Error) => e)
      // The helper parses the input after every delta: the doubled one breaks it, and it gives up.
      expect(partial).toEqual(TOOL.arguments.slice(0, 2))
      expect(result).toBeInstanceOf(Anthropic.AnthropicError)
      // V8's wording; Node 22+ adds "(line 1 column 16)".
      expect((result as Error).message).toMatch(/^Expected ',' or '}' after property value in JSON at position 15\b/)
      expect((result as Error).cause).toBeInstanceOf(SyntaxError)
      expect((await scenario!.settled()).calls[0]).toMatchObject({ injected: true })
    })

    it('sends a Responses function call\'s arguments delta twice: the final arguments are not the upstream\'s', async () => {
      const client = await openai(transport, { rules: [{ name: 'dup', route: RESPONSES, kind: 'duplicate_event', at: 'tool_arguments' }] })
      const stream = client.responses.stream({ model: 'gpt-r', input: 'Weather in Paris?', tools: responseTools })
      const deltas: string[] = []
      stream.on('response.function_call_arguments.delta', (event) => deltas.push(event.delta))
      await stream.finalResponse()
      expect(deltas).toEqual([TOOL.arguments[0], ...TOOL.arguments])
    })

    it('drops the usage of an OpenAI chat stream; the report keeps the upstream\'s tokens', async () => {
      const client = await openai(transport, { rules: [{ name: 'nousage', route: CHAT, kind: 'drop_usage' }] })
      const { items, error } = await drain(await client.chat.completions.create({ model: 'gpt-x', messages, stream: true, stream_options: { include_usage: true } }))
      expect([chatText(items), error]).toEqual([WORDS.join(''), null])
      expect(items.filter((chunk) => chunk.usage)).toEqual([])
      const call = (await scenario!.settled()).calls[0]
      expect(call).toMatchObject({ injected: true, outcome: 'response', model: { inputTokens: USAGE.chat.prompt_tokens, outputTokens: USAGE.chat.completion_tokens } })
    })

    it('drops the usage of a Responses stream: the final response says usage null; the report keeps the tokens', async () => {
      const client = await openai(transport, { rules: [{ name: 'nousage', route: RESPONSES, kind: 'drop_usage' }] })
      const response = await client.responses.stream({ model: 'gpt-r', input: 'Say hello.' }).finalResponse()
      expect([response.output_text, response.usage]).toEqual([WORDS.join(''), null])
      const call = (await scenario!.settled()).calls[0]
      expect(call).toMatchObject({ injected: true, model: { inputTokens: USAGE.responses.input_tokens, outputTokens: USAGE.responses.output_tokens } })
    })

    it('drops the usage of an Anthropic stream: the SDK\'s stream helper fails on message_delta; the report keeps the upstream\'s tokens', async () => {
      const client = await anthropic(transport, { rules: [{ name: 'nousage', route: MESSAGES, kind: 'drop_usage' }] })
      const stream = client.messages.stream(claude)
      const result = await stream.finalMessage().catch((e: Error) => e)
      // The helper reads message_delta's usage unguarded (@anthropic-ai/sdk 1.14.0) and gives up.
      expect(result).toBeInstanceOf(Anthropic.AnthropicError)
      expect((result as Error).message).toBe("Cannot read properties of undefined (reading 'output_tokens')")
      const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens } = USAGE.messages
      const call = (await scenario!.settled()).calls[0]
      expect(call).toMatchObject({ injected: true, model: { inputTokens: input_tokens + cache_creation_input_tokens + cache_read_input_tokens, outputTokens: output_tokens } })
    })

    it('relays a stream that reported no usage whole, and says why drop_usage did not fire', async () => {
      const client = await openai(transport, { rules: [{ name: 'nousage', route: CHAT, kind: 'drop_usage' }] })
      await drain(await client.chat.completions.create({ model: 'gpt-x', messages, stream: true }))
      expect((await scenario!.settled()).calls[0]).toMatchObject({ injected: false, notFired: expect.stringContaining('no usage') as unknown })
    })
  })
}

it('keeps the upstream arguments whole on a non-streamed tool call (the fault needs a stream)', async () => {
  const client = await openai('reverse', { rules: [{ name: 'cut', route: CHAT, kind: 'stream_cut', at: 'tool_arguments' }] })
  const completion = await client.chat.completions.create({ model: 'gpt-x', messages, tools: chatTools })
  const call = completion.choices[0]?.message.tool_calls?.[0]
  expect(call?.type === 'function' ? call.function.arguments : null).toBe(TOOL_ARGUMENTS)
})
