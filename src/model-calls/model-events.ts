/**
 * What one SSE event of a model provider's stream carries, for the stream faults that understand
 * events (`at: text | tool_arguments`, `duplicate_event`, `drop_usage`), in the three wire formats:
 *
 * | | text delta | tool-call arguments delta | usage |
 * |---|---|---|---|
 * | OpenAI chat | `choices[].delta.content` | `choices[].delta.tool_calls[].function.arguments` | `usage` (with `include_usage`) |
 * | OpenAI Responses | `response.output_text.delta` | `response.function_call_arguments.delta` | `response.usage` of `response.completed` |
 * | Anthropic messages | `content_block_delta` / `text_delta` | `content_block_delta` / `input_json_delta` | `message.usage` of `message_start`, `usage` of `message_delta` |
 *
 * Only a complete event is read (the splitter holds it whole anyway); a non-JSON event carries nothing.
 * The model-calls plug-in gives the kernel its delta reader (`readDelta`) from here.
 */
import type { DeltaKind } from '../engine/streams/deltas.js'

export interface ModelEvent {
  /** The delta the event carries, if any (a non-empty one). */
  readonly delta: DeltaKind | null
  /** Whether it reports usage. */
  readonly usage: boolean
  /** The event with its usage removed: null to drop the whole event; absent when it reports none. */
  withoutUsage(): Uint8Array | null
}

const NOTHING: ModelEvent = { delta: null, usage: false, withoutUsage: () => null }

type Json = Record<string, unknown>

/** What a complete SSE event (its bytes, blank line included) carries. */
export function readModelEvent(bytes: Uint8Array): ModelEvent {
  const text = new TextDecoder().decode(bytes)
  const lines = text.split(/\r\n|\r|\n/)
  const data: string[] = []
  for (const line of lines) if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5))
  if (data.length === 0) return NOTHING
  let value: unknown
  try {
    value = JSON.parse(data.join('\n'))
  } catch {
    return NOTHING
  }
  if (!isObject(value)) return NOTHING
  const rewrite = (changed: Json) => encodeEvent(lines, changed)
  const type = value.type
  if (typeof type === 'string') {
    // Responses and Anthropic events name their type.
    if (type === 'response.output_text.delta') return event(nonEmpty(value.delta) ? 'text' : null)
    if (type === 'response.function_call_arguments.delta') return event(nonEmpty(value.delta) ? 'tool_arguments' : null)
    if (type === 'content_block_delta' && isObject(value.delta)) {
      const delta = value.delta
      if (delta.type === 'text_delta') return event(nonEmpty(delta.text) ? 'text' : null)
      if (delta.type === 'input_json_delta') return event(nonEmpty(delta.partial_json) ? 'tool_arguments' : null)
      return NOTHING
    }
    if ((type === 'response.completed' || type === 'response.incomplete' || type === 'response.failed') && isObject(value.response) && isObject(value.response.usage)) {
      return usage(() => rewrite({ ...value, response: { ...(value.response as Json), usage: null } }))
    }
    if (type === 'message_start' && isObject(value.message) && isObject(value.message.usage)) {
      const { usage: _dropped, ...message } = value.message
      return usage(() => rewrite({ ...value, message }))
    }
    if (type === 'message_delta' && isObject(value.usage)) {
      const { usage: _dropped, ...rest } = value
      return usage(() => rewrite(rest))
    }
    return NOTHING
  }
  // OpenAI chat completion chunks.
  const choices = Array.isArray(value.choices) ? value.choices.filter(isObject) : []
  let kind: DeltaKind | null = null
  for (const choice of choices) {
    const delta = choice.delta
    if (!isObject(delta)) continue
    if (Array.isArray(delta.tool_calls) && delta.tool_calls.some((call) => isObject(call) && isObject(call.function) && nonEmpty(call.function.arguments))) kind = 'tool_arguments'
    else if (kind === null && nonEmpty(delta.content)) kind = 'text'
  }
  if (isObject(value.usage)) {
    // A usage-only chunk goes whole; one that also carries choices keeps them.
    return { delta: kind, usage: true, withoutUsage: () => (choices.length === 0 ? null : rewrite({ ...value, usage: null })) }
  }
  return event(kind)
}

function event(delta: DeltaKind | null): ModelEvent {
  return delta === null ? NOTHING : { delta, usage: false, withoutUsage: () => null }
}

function usage(without: () => Uint8Array): ModelEvent {
  return { delta: null, usage: true, withoutUsage: without }
}

/** The event again with `data` as its one data line; its other lines (event name, id) kept in order. */
function encodeEvent(lines: readonly string[], data: Json): Uint8Array {
  const out: string[] = []
  let written = false
  for (const line of lines) {
    if (line === '') continue
    if (line.startsWith('data:')) {
      if (!written) out.push(`data: ${JSON.stringify(data)}`)
      written = true
    } else out.push(line)
  }
  return new TextEncoder().encode(`${out.join('\n')}\n\n`)
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function nonEmpty(value: unknown): boolean {
  return typeof value === 'string' && value.length > 0
}
