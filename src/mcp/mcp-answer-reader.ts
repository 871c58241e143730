/**
 * Reads the JSON-RPC answer to one MCP request as it streams by (a JSON body or an event stream
 * whose events are JSON-RPC messages): whether it was a result, a result with `isError: true`,
 * or an error with a code. A message up to 64 KiB (nearly all) is parsed whole at its end; a
 * larger one goes through `JsonPathScanner`, which decodes only the few values that decide it,
 * so a large result is never held.
 */
import { JsonPathScanner, type JsonScalar } from '../json/json-path-scanner.js'
import { SseDecoder } from '../engine/streams/sse-decoder.js'
import type { McpCall } from '../engine/schema/report.js'
import type { JsonRpcId } from './mcp-request.js'

const PATHS = ['id', 'method', 'result.isError', 'result.resultType', 'error.code']
/** Messages up to this size are parsed with JSON.parse: cheaper than scanning byte by byte. */
const PARSED_WHOLE = 64 * 1024

export interface McpAnswer {
  readonly outcome: NonNullable<McpCall['outcome']>
  readonly errorCode: number | null
  /** A result asking the client for input (`resultType: "input_required"`, 2026-07-28): it calls again with it. */
  readonly inputRequired?: boolean
}

/** One message's deciding values; it answers `id` when its id matches and it has no method. */
class MessageValues {
  id: JsonScalar | undefined
  method = false
  isError = false
  inputRequired = false
  errorCode: number | null = null
  take(path: string, value: JsonScalar): void {
    if (path === 'id') this.id = value
    else if (path === 'method') this.method = true
    else if (path === 'result.isError') this.isError = value === true
    else if (path === 'result.resultType') this.inputRequired = value === 'input_required'
    else if (path === 'error.code' && typeof value === 'number') this.errorCode = value
  }
  answer(id: JsonRpcId): McpAnswer | null {
    if (this.method || this.id !== id) return null
    if (this.errorCode !== null) return { outcome: 'error', errorCode: this.errorCode }
    return { outcome: this.isError ? 'isError' : 'result', errorCode: null, ...(this.inputRequired ? { inputRequired: true } : {}) }
  }
}

/** One JSON message's bytes: held and parsed whole while small, scanned once larger. */
class MessageReader {
  readonly values = new MessageValues()
  #held: Uint8Array[] = []
  #size = 0
  #scanner: JsonPathScanner | null = null

  push(bytes: Uint8Array): void {
    if (this.#scanner) return this.#scanner.push(bytes)
    this.#size += bytes.length
    this.#held.push(bytes)
    if (this.#size <= PARSED_WHOLE) return
    const values = this.values
    this.#scanner = new JsonPathScanner(PATHS, (path, value) => values.take(path, value))
    for (const held of this.#held) this.#scanner.push(held)
    this.#held = []
  }

  end(): MessageValues {
    if (this.#scanner) {
      this.#scanner.end()
      return this.values
    }
    let message: unknown
    try {
      message = JSON.parse(Buffer.concat(this.#held, this.#size).toString('utf8'))
    } catch {
      return this.values
    }
    if (message === null || typeof message !== 'object' || Array.isArray(message)) return this.values
    const { id, method, result, error } = message as Record<string, unknown>
    const values = this.values
    if (typeof id === 'string' || typeof id === 'number') values.id = id
    values.method = method !== undefined
    if (result !== null && typeof result === 'object') {
      values.isError = (result as { isError?: unknown }).isError === true
      values.inputRequired = (result as { resultType?: unknown }).resultType === 'input_required'
    }
    if (error !== null && typeof error === 'object' && typeof (error as { code?: unknown }).code === 'number') values.errorCode = (error as { code: number }).code
    return values
  }
}

/** Feed a body's chunks, then `null`; `onAnswer` hears the answer to `id` once, if it comes. */
export function createMcpAnswerReader(id: JsonRpcId, contentType: string, onAnswer: (answer: McpAnswer) => void): (chunk: Uint8Array | null) => void {
  let answered = false
  const finish = (values: MessageValues) => {
    if (answered) return
    const answer = values.answer(id)
    if (answer) {
      answered = true
      onAnswer(answer)
    }
  }
  if (contentType.startsWith('text/event-stream')) {
    let message: MessageReader | null = null
    const decoder = new SseDecoder({
      data(fragment) {
        ;(message ??= new MessageReader()).push(fragment)
      },
      blockEnd() {
        if (message) finish(message.end())
        message = null
      },
    })
    return (chunk) => {
      if (chunk !== null && !answered) decoder.push(chunk)
    }
  }
  if (!contentType.startsWith('application/json')) return () => undefined
  const message = new MessageReader()
  return (chunk) => {
    if (answered) return
    if (chunk !== null) return message.push(chunk)
    finish(message.end())
  }
}
