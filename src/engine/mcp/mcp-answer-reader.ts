/**
 * Reads the JSON-RPC answer to one MCP request as it streams by (a JSON body or an event stream
 * whose events are JSON-RPC messages): whether it was a result, a result with `isError: true`,
 * or an error with a code. Only the few values that decide it are decoded (`JsonPathScanner`);
 * results are never held.
 */
import { JsonPathScanner, type JsonScalar } from '../model-calls/json-path-scanner.js'
import { SseDecoder } from '../streams/sse-decoder.js'
import type { McpCall } from '../schema/report.js'
import type { JsonRpcId } from './mcp-request.js'

const PATHS = ['id', 'method', 'result.isError', 'error.code']

export interface McpAnswer {
  readonly outcome: NonNullable<McpCall['outcome']>
  readonly errorCode: number | null
}

/** One message's values; it answers `id` when its id matches and it has no method. */
class MessageValues {
  id: JsonScalar | undefined
  method = false
  isError = false
  errorCode: number | null = null
  take(path: string, value: JsonScalar): void {
    if (path === 'id') this.id = value
    else if (path === 'method') this.method = true
    else if (path === 'result.isError') this.isError = value === true
    else if (path === 'error.code' && typeof value === 'number') this.errorCode = value
  }
  answer(id: JsonRpcId): McpAnswer | null {
    if (this.method || this.id !== id) return null
    if (this.errorCode !== null) return { outcome: 'error', errorCode: this.errorCode }
    return { outcome: this.isError ? 'isError' : 'result', errorCode: null }
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
    let values: MessageValues | null = null
    let scanner: JsonPathScanner | null = null
    const decoder = new SseDecoder({
      data(fragment) {
        if (!scanner) {
          const current = (values = new MessageValues())
          scanner = new JsonPathScanner(PATHS, (path, value) => current.take(path, value))
        }
        scanner.push(fragment)
      },
      blockEnd() {
        scanner?.end()
        if (values) finish(values)
        scanner = null
        values = null
      },
    })
    return (chunk) => {
      if (chunk !== null && !answered) decoder.push(chunk)
    }
  }
  if (!contentType.startsWith('application/json')) return () => undefined
  const values = new MessageValues()
  const scanner = new JsonPathScanner(PATHS, (path, value) => values.take(path, value))
  return (chunk) => {
    if (answered) return
    if (chunk !== null) return scanner.push(chunk)
    scanner.end()
    finish(values)
  }
}
