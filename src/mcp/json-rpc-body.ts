/**
 * The JSON-RPC messages in an MCP answer's body, whichever way the server sent it: one JSON
 * document (`application/json`), or the `data` of each event of an event stream (a Streamable
 * HTTP POST stream, or a piece of one). Used to read a `tools/list` answer, to change a tool's
 * answer (schema drift) and to give a replayed answer the live request's id.
 */
import type { JsonRpcId } from './mcp-request.js'

type JsonObject = Record<string, unknown>

const decoder = new TextDecoder()
const encoder = new TextEncoder()

function parseObject(text: string): JsonObject | null {
  try {
    const value: unknown = JSON.parse(text)
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : null
  } catch {
    return null
  }
}

/** Whether `message` is the answer (result or error) to the request `id`. */
function isAnswerTo(message: JsonObject, id: JsonRpcId): boolean {
  return message.jsonrpc === '2.0' && message.id === id && message.method === undefined && ('result' in message || 'error' in message)
}

interface SseEvent {
  /** Indexes of its `data:` lines. */
  readonly dataLines: number[]
}

/** The events of an event-stream text, as indexes into `lines` (split on LF; a CR before it stays on the line). */
function eventsOf(lines: string[]): SseEvent[] {
  const events: SseEvent[] = []
  let current: number[] = []
  lines.forEach((line, index) => {
    const bare = line.endsWith('\r') ? line.slice(0, -1) : line
    if (bare === '') {
      if (current.length > 0) events.push({ dataLines: current })
      current = []
    } else if (bare.startsWith('data:') || bare === 'data') current.push(index)
  })
  if (current.length > 0) events.push({ dataLines: current })
  return events
}

/** An event's data, as a client assembles it: its data lines' values joined with LF. */
function dataOf(lines: string[], event: SseEvent): string {
  return event.dataLines
    .map((index) => {
      const line = lines[index] as string
      const value = (line.endsWith('\r') ? line.slice(0, -1) : line).slice(5)
      return value.startsWith(' ') ? value.slice(1) : value
    })
    .join('\n')
}

/** The JSON-RPC messages (objects) in `bytes`: the whole body as JSON, else each event's data. */
export function jsonRpcMessages(bytes: Uint8Array): JsonObject[] {
  const text = decoder.decode(bytes)
  const whole = parseObject(text)
  if (whole) return [whole]
  const lines = text.split('\n')
  const messages: JsonObject[] = []
  for (const event of eventsOf(lines)) {
    const message = parseObject(dataOf(lines, event))
    if (message) messages.push(message)
  }
  return messages
}

/**
 * `bytes` with the answer to `id` changed by `edit` (which mutates it and says whether it did),
 * or null when `bytes` hold no such answer or `edit` changed nothing. In an event stream, the
 * answer's event keeps its other fields (`event:`, `id:`) and gets its data on one line.
 */
export function editJsonRpcAnswer(bytes: Uint8Array, id: JsonRpcId, edit: (answer: JsonObject) => boolean): Uint8Array | null {
  return editJsonMessages(bytes, (message) => isAnswerTo(message, id) && edit(message))
}

/**
 * `bytes` (a JSON body, or an event stream or a piece of one) with each JSON object in it (the
 * whole body, or an event's data) changed by `edit` (which mutates it and says whether it did), or
 * null when `edit` changed none; edited events get their data on one line, as above.
 */
export function editJsonMessages(bytes: Uint8Array, edit: (message: JsonObject) => boolean): Uint8Array | null {
  const text = decoder.decode(bytes)
  const whole = parseObject(text)
  if (whole) return edit(whole) ? encoder.encode(JSON.stringify(whole)) : null
  const lines = text.split('\n')
  let changed = false
  for (const event of eventsOf(lines)) {
    const message = parseObject(dataOf(lines, event))
    if (!message || !edit(message)) continue
    const [first, ...rest] = event.dataLines as [number, ...number[]]
    const cr = (lines[first] as string).endsWith('\r') ? '\r' : ''
    lines[first] = `data: ${JSON.stringify(message)}${cr}`
    for (const index of rest) lines[index] = '\u0000'
    changed = true
  }
  if (!changed) return null
  return encoder.encode(lines.filter((line) => line !== '\u0000').join('\n'))
}

/** `bytes` (a body, or an event of a stream) with the answer to `recorded` carrying the id `live` instead; `bytes` when it holds no such answer. */
export function withAnswerId(bytes: Uint8Array, recorded: JsonRpcId, live: JsonRpcId): Uint8Array {
  if (recorded === live) return bytes
  return (
    editJsonRpcAnswer(bytes, recorded, (answer) => {
      answer.id = live
      return true
    }) ?? bytes
  )
}
