/**
 * Read a model call's metadata off the wire: the model the provider answered with (else the one
 * requested), input and output tokens from the usage fields, and whether it streamed. It reads
 * the request and response bytes as they pass, JSON or SSE, and keeps only those few values:
 * prompts and outputs are skipped byte by byte, never decoded or stored.
 *
 * Token rules, per API:
 * - OpenAI chat completions: `usage.prompt_tokens` / `usage.completion_tokens`; streamed, the
 *   chunk that carries `usage` (only sent with `stream_options.include_usage`: without it the
 *   counts stay null, not zero).
 * - OpenAI Responses: `usage.input_tokens` / `usage.output_tokens`; streamed, from the final
 *   `response.completed` (or `incomplete`/`failed`) event.
 * - Anthropic messages: input = `input_tokens` + `cache_creation_input_tokens` +
 *   `cache_read_input_tokens`, output = `output_tokens`; streamed, from `message_start`, then
 *   overwritten by the cumulative counts of `message_delta`.
 *
 * An answer that reached its end (its final event, or its whole JSON body) with a count still
 * unknown sets `usageMissing`: its tokens are unknown, not zero, whatever the client got of it
 * (a token budget fails closed then), unlike an answer that broke off before its usage.
 */
import zlib from 'node:zlib'
import type { HeaderMap } from '../engine/http.js'
import type { ModelCall } from '../engine/schema/report.js'
import { SseDecoder } from '../engine/streams/sse-decoder.js'
import { JsonPathScanner, type JsonScalar } from '../json/json-path-scanner.js'
import type { ModelEndpoint } from './recognize-model-call.js'
import { isTerminalEvent } from './terminal-event.js'

/** A compressed (non-streamed) body is decoded once it ended; larger ones are not read. */
const MAX_COMPRESSED_BYTES = 4 * 1024 * 1024
const MAX_DECODED_BYTES = 64 * 1024 * 1024
/** Model names are kept up to this length. */
const MAX_MODEL_NAME = 200

type Slot = 'model' | 'input' | 'cacheWrite' | 'cacheRead' | 'output'

/** Where each value sits in a whole JSON body. */
const JSON_PATHS: Record<ModelCall['api'], Record<string, Slot>> = {
  'chat.completions': { model: 'model', 'usage.prompt_tokens': 'input', 'usage.completion_tokens': 'output' },
  responses: { model: 'model', 'usage.input_tokens': 'input', 'usage.output_tokens': 'output' },
  messages: { model: 'model', 'usage.input_tokens': 'input', 'usage.cache_creation_input_tokens': 'cacheWrite', 'usage.cache_read_input_tokens': 'cacheRead', 'usage.output_tokens': 'output' },
}

/** Where each value sits in the data of one streamed event. */
const EVENT_PATHS: Record<ModelCall['api'], Record<string, Slot>> = {
  'chat.completions': JSON_PATHS['chat.completions'],
  responses: { 'response.model': 'model', 'response.usage.input_tokens': 'input', 'response.usage.output_tokens': 'output' },
  messages: {
    'message.model': 'model',
    'message.usage.input_tokens': 'input',
    'message.usage.cache_creation_input_tokens': 'cacheWrite',
    'message.usage.cache_read_input_tokens': 'cacheRead',
    'message.usage.output_tokens': 'output',
    // message_delta: cumulative counts for the whole message.
    'usage.input_tokens': 'input',
    'usage.cache_creation_input_tokens': 'cacheWrite',
    'usage.cache_read_input_tokens': 'cacheRead',
    'usage.output_tokens': 'output',
  },
}

export class ModelCallReader {
  /** The record's entry, kept current as bytes arrive. */
  readonly call: ModelCall
  #requested: string | null = null
  #answered: string | null = null
  readonly #tokens: Partial<Record<Exclude<Slot, 'model'>, number>> = {}
  #request: JsonPathScanner | null
  #body: BodyReader | null = null
  /** The answer reached its end: its final event, or the close of its JSON body. */
  #ended = false

  constructor(endpoint: ModelEndpoint) {
    this.call = { provider: endpoint.provider, api: endpoint.api, model: null, inputTokens: null, outputTokens: null, streamed: false }
    this.#request = new JsonPathScanner(['model', 'stream'], (path, value) => {
      if (path === 'model' && typeof value === 'string' && value) this.#requested = value.slice(0, MAX_MODEL_NAME)
      if (path === 'stream' && value === true) this.call.streamed = true
      this.#update()
    })
  }

  /** A request body chunk (`null` at its end). */
  request(chunk: Uint8Array | null): void {
    if (!this.#request) return
    if (chunk) this.#request.push(chunk)
    else {
      this.#request.end()
      this.#request = null
    }
  }

  /** The upstream's response head: decides how its body is read. */
  responseHead(status: number, headers: HeaderMap): void {
    const type = text(headers['content-type'])
    const encoding = text(headers['content-encoding'])
    const streamed = type.startsWith('text/event-stream')
    this.call.streamed = streamed
    const paths = streamed ? EVENT_PATHS[this.call.api] : JSON_PATHS[this.call.api]
    const onValue = (path: string, value: JsonScalar) => this.#take(paths[path], value)
    if (status < 200 || status > 299) return
    if (streamed) this.#body = eventReader(Object.keys(paths), onValue)
    else {
      const json = new JsonPathScanner(Object.keys(paths), onValue)
      this.#body = encoding === '' || encoding === 'identity' ? json : compressedReader(encoding, json)
    }
  }

  /** A response body chunk (`null` at its end). */
  responseBody(chunk: Uint8Array | null): void {
    const body = this.#body
    if (!body) return
    if (chunk) body.push(chunk)
    else {
      body.end()
      this.#body = null
    }
    if (!this.#ended && body.complete) {
      this.#ended = true
      this.#update()
    }
  }

  #take(slot: Slot | undefined, value: JsonScalar): void {
    if (slot === undefined) return
    if (slot === 'model') {
      if (typeof value === 'string' && value && this.#answered === null) this.#answered = value.slice(0, MAX_MODEL_NAME)
    } else if (typeof value === 'number' && Number.isInteger(value) && value >= 0) {
      this.#tokens[slot] = value
    }
    this.#update()
  }

  #update(): void {
    const call = this.call
    call.model = this.#answered ?? this.#requested
    const { input, cacheWrite, cacheRead, output } = this.#tokens
    call.inputTokens = input === undefined ? null : input + (cacheWrite ?? 0) + (cacheRead ?? 0)
    call.outputTokens = output ?? null
    if (this.#ended && (call.inputTokens === null || call.outputTokens === null)) call.usageMissing = true
    else delete call.usageMissing
  }
}

function text(value: string | string[] | undefined): string {
  return (Array.isArray(value) ? value.join(', ') : value ?? '').trim().toLowerCase()
}

/** A response body's reader: fed its chunks, and whether the answer reached its end. */
interface BodyReader {
  push(chunk: Uint8Array): void
  end(): void
  readonly complete: boolean
}

/** Bytes of an event's data kept to tell whether it ends the stream (`[DONE]`, a leading `"type"`). */
const DATA_HEAD = 96

/** Scan the data of each SSE event with a fresh scanner; complete once the stream's final event ended. */
function eventReader(paths: string[], onValue: (path: string, value: JsonScalar) => void): BodyReader {
  let event: JsonPathScanner | null = null
  let name: string | null = null
  let head = ''
  let final = false
  const decoder = new SseDecoder({
    event(value) {
      name = value
    },
    data(fragment) {
      event ??= new JsonPathScanner(paths, onValue)
      event.push(fragment)
      if (head.length < DATA_HEAD) head += Buffer.from(fragment.subarray(0, DATA_HEAD - head.length)).toString('latin1')
    },
    blockEnd() {
      event?.end()
      if (event && isTerminalEvent(name, head)) final = true
      event = null
      name = null
      head = ''
    },
  })
  return {
    push: (chunk) => decoder.push(chunk),
    end: () => event?.end(),
    get complete() {
      return final
    },
  }
}

/**
 * A compressed JSON body: the compressed bytes are held (up to 4 MiB) and decoded when the body
 * ended, so the values are known when the exchange finishes.
 */
function compressedReader(encoding: string, json: JsonPathScanner): BodyReader {
  const chunks: Uint8Array[] = []
  let size = 0
  return {
    push(chunk) {
      size += chunk.length
      if (size <= MAX_COMPRESSED_BYTES) chunks.push(chunk)
    },
    end() {
      if (size > MAX_COMPRESSED_BYTES) return
      const options = { maxOutputLength: MAX_DECODED_BYTES, finishFlush: zlib.constants.Z_SYNC_FLUSH }
      try {
        const all = Buffer.concat(chunks)
        const decoded =
          encoding === 'gzip' || encoding === 'x-gzip'
            ? zlib.gunzipSync(all, options)
            : encoding === 'deflate'
              ? zlib.inflateSync(all, options)
              : encoding === 'br'
                ? zlib.brotliDecompressSync(all, { maxOutputLength: MAX_DECODED_BYTES })
                : null
        if (decoded) {
          json.push(decoded)
          json.end()
        }
      } catch {
        // Not decodable: the values stay unknown.
      }
    },
    get complete() {
      return json.complete
    },
  }
}
