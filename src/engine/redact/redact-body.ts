/**
 * Body redaction by content type: JSON (and NDJSON), form-urlencoded, server-sent events,
 * multipart, and free text for everything else.
 *
 * @note A body that needs no redaction comes back byte for byte, even JSON: re-serialising
 * would change number formatting and key spacing, and recorded bodies should replay
 * unchanged. Only a JSON body that held a secret is re-serialised (compactly).
 */
import type { JsonValue } from '../canonical-json.js'
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

/** Redact a JSON text; `undefined` when it does not parse. */
function redactJsonText(text: string, scrubber: BodyScrubber): string | undefined {
  let parsed: JsonValue
  try {
    parsed = JSON.parse(text) as JsonValue
  } catch {
    return undefined
  }
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

// Line terminators are kept as they were (`\r\n`, `\n` or `\r`), so offsets after a redacted
// line stay meaningful and the stream re-parses the same way.
function mapLines(text: string, redactLine: (line: string) => string): string {
  return text
    .split(/(\r\n|\n|\r)/)
    .map((piece, index) => (index % 2 === 1 ? piece : redactLine(piece)))
    .join('')
}

function redactNdjson(text: string, scrubber: BodyScrubber): string {
  return mapLines(text, (line) => (line.trim() === '' ? line : redactJsonOrText(line, scrubber)))
}

function redactEventStream(text: string, scrubber: BodyScrubber): string {
  return mapLines(text, (line) => {
    if (!line.startsWith('data:')) return scrubber.text(line)
    const prefix = line.startsWith('data: ') ? 'data: ' : 'data:'
    const payload = line.slice(prefix.length)
    // Only try JSON.parse where it can succeed; most LLM streams are JSON, `[DONE]` is not.
    const first = payload.trimStart()[0]
    const json = first === '{' || first === '[' || first === '"' ? redactJsonText(payload, scrubber) : undefined
    return prefix + (json ?? scrubber.text(payload))
  })
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
