/**
 * Body redaction by content type: JSON (and NDJSON), form-urlencoded, server-sent events,
 * multipart, and free text for everything else.
 *
 * @note A body that needs no redaction comes back byte for byte, even JSON: re-serialising
 * would change number formatting and key spacing, and recorded bodies should replay
 * unchanged. Only a JSON body that held a secret is re-serialised (compactly).
 */
import type { JsonValue } from '../json/canonical-json.js'
import { hasDuplicateKeys } from '../json/duplicate-keys.js'
import { redactJson, type JsonScrubber } from './redact-json.js'
import { redactQueryPairs } from './redact-url.js'
import { REDACTED } from './redacted-marker.js'

/** What body redaction needs from a redactor. */
export type BodyScrubber = JsonScrubber

/** The media type of a `Content-Type` value, lowercase, without parameters. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase()
}

function isJsonType(type: string): boolean {
  return type === 'application/json' || type === 'text/json' || type.endsWith('+json')
}

function isNdjsonType(type: string): boolean {
  return type === 'application/x-ndjson' || type === 'application/jsonl' || type === 'application/jsonlines' || type === 'application/json-seq'
}

/** Redact a JSON text; `undefined` when it does not parse, or names a member twice. */
function redactJsonText(text: string, scrubber: BodyScrubber): string | undefined {
  let parsed: JsonValue
  try {
    parsed = JSON.parse(text) as JsonValue
  } catch {
    return undefined
  }
  // `JSON.parse` kept the last of two duplicate members: re-serialised, the body would lose the
  // first (and compare equal to a body without it), and a value only the first held would go
  // unscanned. The text scan keeps every byte it does not redact.
  if (hasDuplicateKeys(text, parsed)) return undefined
  try {
    const { value, changed } = redactJson(parsed, scrubber)
    return changed ? JSON.stringify(value) : text
  } catch (error) {
    // Nesting deeper than the call stack: the text scan still covers every string in it.
    if (error instanceof RangeError) return undefined
    throw error
  }
}

function redactJsonOrText(text: string, scrubber: BodyScrubber): string {
  return redactJsonText(text, scrubber) ?? scrubber.text(text)
}

// Line terminators are kept as they were (`\r\n`, `\n` or `\r`).
function mapLines(text: string, redactLine: (line: string) => string): string {
  return text
    .split(/(\r\n|\n|\r)/)
    .map((piece, index) => (index % 2 === 1 ? piece : redactLine(piece)))
    .join('')
}

function redactNdjson(text: string, scrubber: BodyScrubber): string {
  return mapLines(text, (line) => (line.trim() === '' ? line : redactJsonOrText(line, scrubber)))
}

function dataPayload(line: string): { prefix: string; payload: string } {
  const prefix = line.startsWith('data: ') ? 'data: ' : 'data:'
  return { prefix, payload: line.slice(prefix.length) }
}

// One event's data: JSON when the joined `data:` lines parse, else text, then any single
// line that is JSON on its own (servers that send one JSON document per line).
function redactEventData(data: string, scrubber: BodyScrubber): string {
  // Only try JSON.parse where it can succeed; most LLM streams are JSON, `[DONE]` is not.
  const first = data.trimStart()[0]
  const json = first === '{' || first === '[' || first === '"' ? redactJsonText(data, scrubber) : undefined
  if (json !== undefined) return json
  const scanned = scrubber.text(data)
  if (!scanned.includes('\n')) return scanned
  return scanned
    .split('\n')
    .map((line) => redactJsonText(line, scrubber) ?? line)
    .join('\n')
}

// Consecutive `data:` lines form one payload (joined with `\n`, as the SSE spec says), so a
// PEM key or JSON document spread over several lines is seen whole.
function redactEventStream(text: string, scrubber: BodyScrubber): string {
  const pieces = text.split(/(\r\n|\n|\r)/)
  let out = ''
  let i = 0
  while (i < pieces.length) {
    const line = pieces[i] as string
    if (!line.startsWith('data:')) {
      out += scrubber.text(line) + (pieces[i + 1] ?? '')
      i += 2
      continue
    }
    const payloads: string[] = []
    const terminators: string[] = []
    let j = i
    while (j < pieces.length && (pieces[j] as string).startsWith('data:')) {
      payloads.push(dataPayload(pieces[j] as string).payload)
      terminators.push(pieces[j + 1] ?? '')
      j += 2
    }
    const data = payloads.join('\n')
    const redacted = redactEventData(data, scrubber)
    if (redacted === data) {
      out += pieces.slice(i, j).join('')
    } else {
      const { prefix } = dataPayload(line)
      const lines = redacted.split('\n')
      const inner = terminators[0] as string
      lines.forEach((payload, k) => {
        out += prefix + payload + (k === lines.length - 1 ? (terminators[terminators.length - 1] as string) : inner)
      })
    }
    i = j
  }
  return out
}

function multipartBoundary(contentType: string): string | undefined {
  const match = /;\s*boundary=(?:"([^"]{1,200})"|([^\s;]{1,200}))/i.exec(contentType)
  return match?.[1] ?? match?.[2]
}

function redactMultipart(text: string, boundary: string, scrubber: BodyScrubber, redactBody: (text: string, contentType: string | undefined) => string): string {
  const delimiter = `--${boundary}`
  const parts = text.split(delimiter)
  return parts
    .map((part, index) => {
      // The preamble and the closing `--` epilogue are plain text.
      if (index === 0 || part.startsWith('--')) return scrubber.text(part)
      const headerEnd = /\r?\n\r?\n/.exec(part)
      if (headerEnd === null) return scrubber.text(part)
      const head = part.slice(0, headerEnd.index)
      const separator = headerEnd[0]
      const rest = part.slice(headerEnd.index + separator.length)
      // The part body ends before the line break that precedes the next delimiter.
      const trailer = /\r?\n$/.exec(rest)?.[0] ?? ''
      const content = rest.slice(0, rest.length - trailer.length)
      const name = /content-disposition:[^\r\n]*?;\s*name="([^"\r\n]{0,200})"/i.exec(head)?.[1]
      const partType = /(?:^|\n)content-type:[ \t]*([^\r\n]{1,200})/i.exec(head)?.[1]
      const redacted = name !== undefined && scrubber.isSecretName(name) ? REDACTED : redactBody(content, partType)
      return scrubber.text(head) + separator + redacted + trailer
    })
    .join(delimiter)
}

/** Redact a body given its `Content-Type`. */
export function redactBody(text: string, contentType: string | undefined, scrubber: BodyScrubber): string {
  const type = mediaType(contentType)
  const recurse = (inner: string, innerType: string | undefined): string => redactBody(inner, innerType, scrubber)
  if (isJsonType(type)) return redactJsonOrText(text, scrubber)
  if (isNdjsonType(type)) return redactNdjson(text, scrubber)
  if (type === 'application/x-www-form-urlencoded') return redactQueryPairs(text, scrubber)
  if (type === 'text/event-stream') return redactEventStream(text, scrubber)
  if (type.startsWith('multipart/')) {
    const boundary = multipartBoundary(contentType ?? '')
    if (boundary !== undefined) return redactMultipart(text, boundary, scrubber, recurse)
  }
  return scrubber.text(text)
}
