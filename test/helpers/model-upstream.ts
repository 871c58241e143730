/**
 * A fake model provider on 127.0.0.1 that speaks the OpenAI (chat completions, Responses) and
 * Anthropic (messages) wire formats, streamed or not, with real-shaped events and usage, and a
 * real delay between events. It records when it sent each event, so tests can prove timing.
 */
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** Usage each API reports (tests compare the report against these numbers). */
export const USAGE = {
  chat: { prompt_tokens: 11, completion_tokens: 7 },
  responses: { input_tokens: 13, output_tokens: 5 },
  /** Anthropic input = input_tokens + cache_creation_input_tokens + cache_read_input_tokens = 33. */
  messages: { input_tokens: 21, cache_creation_input_tokens: 4, cache_read_input_tokens: 8, output_tokens: 9 },
} as const

/** The model the provider answers with, for a requested model. */
export const answered = (requested: string) => `${requested}-2025-01-01`

export const WORDS = ['Hello', ', ', 'world', '!']

/**
 * The tool call the provider answers with when the request offers tools and the conversation has
 * no tool result yet: its arguments streamed in these pieces (a JSON object only once all arrived).
 */
export const TOOL = { name: 'get_weather', arguments: ['{"city"', ': "Pa', 'ris"}'] } as const
export const TOOL_ARGUMENTS = TOOL.arguments.join('')

export interface ModelUpstream {
  readonly url: string
  /** Requests received, by path. */
  readonly requests: Array<{ path: string; body: Record<string, unknown> }>
  /** When (performance.now(), ms) each event of the latest stream was written, and when it ended. */
  readonly sent: { events: number[]; end: number | null }
  close(): Promise<void>
}

export interface ModelUpstreamOptions {
  /** Milliseconds between events. Default 20. */
  gapMs?: number
  /** Milliseconds between the last event and the end of the stream. Default 0. */
  tailMs?: number
}

type Event = { event?: string; data: unknown }

export async function startModelUpstream(options: ModelUpstreamOptions = {}): Promise<ModelUpstream> {
  const gapMs = options.gapMs ?? 20
  const requests: ModelUpstream['requests'] = []
  const sent: { events: number[]; end: number | null } = { events: [], end: null }
  const sockets = new Set<import('node:net').Socket>()

  const stream = async (res: http.ServerResponse, events: Event[]) => {
    sent.events = []
    sent.end = null
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    for (const [index, event] of events.entries()) {
      if (index > 0) await new Promise((resolve) => setTimeout(resolve, gapMs))
      if (res.destroyed) return
      const data = typeof event.data === 'string' ? event.data : JSON.stringify(event.data)
      res.write(`${event.event ? `event: ${event.event}\n` : ''}data: ${data}\n\n`)
      sent.events.push(performance.now())
    }
    if (options.tailMs) await new Promise((resolve) => setTimeout(resolve, options.tailMs))
    if (res.destroyed) return
    res.end()
    sent.end = performance.now()
  }
  const json = (res: http.ServerResponse, value: unknown) => {
    const text = JSON.stringify(value)
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://upstream')
      let body: Record<string, unknown> = {}
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>
      } catch {
        // not JSON
      }
      requests.push({ path: url.pathname, body })
      const model = answered(typeof body.model === 'string' ? body.model : 'unknown')
      const tool = wantsToolCall(body)
      if (req.method === 'POST' && url.pathname === '/v1/chat/completions') return void (body.stream ? stream(res, tool ? chatToolEvents(model, body) : chatEvents(model, body)) : json(res, loops(body) ? toolTurn(model, body) : chatCompletion(model, tool)))
      if (req.method === 'POST' && url.pathname === '/v1/responses') return void (body.stream ? stream(res, tool ? responseToolEvents(model) : responseEvents(model)) : json(res, response(model, 'completed', tool)))
      if (req.method === 'POST' && url.pathname === '/v1/messages') return void (body.stream ? stream(res, tool ? messageToolEvents(model) : messageEvents(model)) : json(res, message(model, tool)))
      if (url.pathname === '/ticks') {
        const count = Number(url.searchParams.get('count') ?? 5)
        return void stream(res, Array.from({ length: count }, (_, i) => ({ data: { tick: i + 1 } })))
      }
      if (url.pathname === '/plain') {
        // A plain body in several writes, without a content length.
        const size = Number(url.searchParams.get('bytes') ?? 100)
        res.writeHead(200, { 'content-type': 'text/plain' })
        const text = 'abcdefghij'.repeat(Math.ceil(size / 10)).slice(0, size)
        void (async () => {
          for (let at = 0; at < text.length; at += 32) {
            res.write(text.slice(at, at + 32))
            await new Promise((resolve) => setTimeout(resolve, 2))
          }
          res.end()
        })()
        return
      }
      res.writeHead(404, { 'content-type': 'application/json' })
      res.end('{"error":{"message":"not found"}}')
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    sent,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}

function chatEvents(model: string, request: Record<string, unknown>): Event[] {
  const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1700000000, model, system_fingerprint: 'fp_1' }
  const events: Event[] = [{ data: { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], usage: null } }]
  for (const word of WORDS) events.push({ data: { ...base, choices: [{ index: 0, delta: { content: word }, finish_reason: null }], usage: null } })
  events.push({ data: { ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null } })
  const includeUsage = (request.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true
  if (includeUsage) events.push({ data: { ...base, choices: [], usage: { ...USAGE.chat, total_tokens: USAGE.chat.prompt_tokens + USAGE.chat.completion_tokens } } })
  events.push({ data: '[DONE]' })
  return events
}

/** Tool calls the model makes in one conversation before it answers in text. */
export const TOOL_TURNS = 2

/**
 * Whether a non-streamed chat request runs the multi-turn loop below: it offers a tool other than
 * TOOL (which the fake model calls once, with TOOL_ARGUMENTS, as the stream-fault tests expect).
 */
function loops(body: Record<string, unknown>): boolean {
  const name = (body.tools as Array<{ function?: { name?: string } }> | undefined)?.[0]?.function?.name
  return name !== undefined && name !== TOOL.name
}

/**
 * A chat completion for a request offering `tools`: a call of the first tool with a new id each
 * time (as providers mint them: `call_` and 24 random characters) until the conversation holds
 * TOOL_TURNS tool results, then the answer in text.
 */
function toolTurn(model: string, body: Record<string, unknown>) {
  const messages = Array.isArray(body.messages) ? (body.messages as Array<{ role?: string }>) : []
  const results = messages.filter((message) => message.role === 'tool').length
  const tool = (body.tools as Array<{ function?: { name?: string } }>)[0]?.function?.name ?? 'tool'
  const message =
    results < TOOL_TURNS
      ? { role: 'assistant', content: null, tool_calls: [{ id: `call_${randomBytes(18).toString('base64url').slice(0, 24)}`, type: 'function', function: { name: tool, arguments: JSON.stringify({ turn: results + 1 }) } }] }
      : { role: 'assistant', content: `Done after ${results} tool calls.` }
  return { ...chatCompletion(model), choices: [{ index: 0, message, finish_reason: results < TOOL_TURNS ? 'tool_calls' : 'stop' }] }
}

/** Whether to answer with a tool call: tools are offered and no tool result is in the conversation yet. */
function wantsToolCall(body: Record<string, unknown>): boolean {
  if (!Array.isArray(body.tools) || body.tools.length === 0) return false
  const items = [...(Array.isArray(body.messages) ? body.messages : []), ...(Array.isArray(body.input) ? body.input : [])] as Array<Record<string, unknown>>
  return !items.some(
    (item) =>
      item.role === 'tool' ||
      item.type === 'function_call_output' ||
      (Array.isArray(item.content) && (item.content as Array<Record<string, unknown>>).some((part) => part.type === 'tool_result')),
  )
}

function chatToolEvents(model: string, request: Record<string, unknown>): Event[] {
  const base = { id: 'chatcmpl-2', object: 'chat.completion.chunk', created: 1700000000, model, system_fingerprint: 'fp_1' }
  const chunk = (delta: Record<string, unknown>, finish: string | null = null): Event => ({ data: { ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null } })
  const events: Event[] = [
    chunk({ role: 'assistant', content: null, tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: TOOL.name, arguments: '' } }], refusal: null }),
    ...TOOL.arguments.map((piece) => chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] })),
    chunk({}, 'tool_calls'),
  ]
  const includeUsage = (request.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true
  if (includeUsage) events.push({ data: { ...base, choices: [], usage: { ...USAGE.chat, total_tokens: USAGE.chat.prompt_tokens + USAGE.chat.completion_tokens } } })
  events.push({ data: '[DONE]' })
  return events
}

function chatCompletion(model: string, tool = false) {
  const message = tool
    ? { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: TOOL.name, arguments: TOOL_ARGUMENTS } }] }
    : { role: 'assistant', content: WORDS.join('') }
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1700000000,
    model,
    choices: [{ index: 0, message, finish_reason: tool ? 'tool_calls' : 'stop' }],
    usage: { ...USAGE.chat, total_tokens: USAGE.chat.prompt_tokens + USAGE.chat.completion_tokens },
  }
}

const FUNCTION_CALL = { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: TOOL.name }

function response(model: string, status: 'in_progress' | 'completed', tool = false) {
  const done = status === 'completed'
  const output = tool
    ? [{ ...FUNCTION_CALL, arguments: TOOL_ARGUMENTS, status: 'completed' }]
    : [{ id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: WORDS.join(''), annotations: [] }] }]
  return {
    id: 'resp_1',
    object: 'response',
    created_at: 1700000000,
    status,
    model,
    output: done ? output : [],
    usage: done
      ? { input_tokens: USAGE.responses.input_tokens, input_tokens_details: { cached_tokens: 0 }, output_tokens: USAGE.responses.output_tokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: USAGE.responses.input_tokens + USAGE.responses.output_tokens }
      : null,
  }
}

function responseEvents(model: string): Event[] {
  let sequence = 0
  const event = (type: string, fields: Record<string, unknown>): Event => ({ event: type, data: { type, sequence_number: sequence++, ...fields } })
  const item = { id: 'msg_1', type: 'message', status: 'in_progress', role: 'assistant', content: [] }
  return [
    event('response.created', { response: response(model, 'in_progress') }),
    event('response.in_progress', { response: response(model, 'in_progress') }),
    event('response.output_item.added', { output_index: 0, item }),
    event('response.content_part.added', { item_id: 'msg_1', output_index: 0, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }),
    ...WORDS.map((delta) => event('response.output_text.delta', { item_id: 'msg_1', output_index: 0, content_index: 0, delta })),
    event('response.output_text.done', { item_id: 'msg_1', output_index: 0, content_index: 0, text: WORDS.join('') }),
    event('response.output_item.done', { output_index: 0, item: { ...item, status: 'completed', content: [{ type: 'output_text', text: WORDS.join(''), annotations: [] }] } }),
    event('response.completed', { response: response(model, 'completed') }),
  ]
}

function responseToolEvents(model: string): Event[] {
  let sequence = 0
  const event = (type: string, fields: Record<string, unknown>): Event => ({ event: type, data: { type, sequence_number: sequence++, ...fields } })
  return [
    event('response.created', { response: response(model, 'in_progress') }),
    event('response.in_progress', { response: response(model, 'in_progress') }),
    event('response.output_item.added', { output_index: 0, item: { ...FUNCTION_CALL, arguments: '', status: 'in_progress' } }),
    ...TOOL.arguments.map((delta) => event('response.function_call_arguments.delta', { item_id: 'fc_1', output_index: 0, delta })),
    event('response.function_call_arguments.done', { item_id: 'fc_1', output_index: 0, arguments: TOOL_ARGUMENTS }),
    event('response.output_item.done', { output_index: 0, item: { ...FUNCTION_CALL, arguments: TOOL_ARGUMENTS, status: 'completed' } }),
    event('response.completed', { response: response(model, 'completed', true) }),
  ]
}

function messageToolEvents(model: string): Event[] {
  const { output_tokens, ...input } = USAGE.messages
  return [
    { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_2', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...input, output_tokens: 1 } } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: TOOL.name, input: {} } } },
    ...TOOL.arguments.map((partial_json) => ({ event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'input_json_delta', partial_json } } })),
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ]
}

function message(model: string, tool = false) {
  return {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model,
    content: tool ? [{ type: 'tool_use', id: 'toolu_1', name: TOOL.name, input: JSON.parse(TOOL_ARGUMENTS) as unknown }] : [{ type: 'text', text: WORDS.join('') }],
    stop_reason: tool ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: USAGE.messages,
  }
}

function messageEvents(model: string): Event[] {
  const { output_tokens, ...input } = USAGE.messages
  return [
    { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...input, output_tokens: 1 } } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
    { event: 'ping', data: { type: 'ping' } },
    ...WORDS.map((text) => ({ event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } } })),
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens } } },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ]
}
