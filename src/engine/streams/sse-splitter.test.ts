import { describe, expect, it } from 'vitest'
import { isTerminalEvent } from '../../model-calls/terminal-event.js'
import { type FinalEventTest, MAX_HELD_BYTES, SseSplitter, type SsePiece } from './sse-splitter.js'

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8')

/** Feed `stream` in the given chunks and collect the pieces, merging partial ones into their block (final events as the model providers end theirs, by default). */
function split(chunks: Uint8Array[], isFinal: FinalEventTest | null = isTerminalEvent): Array<Omit<SsePiece, 'bytes'> & { text: string }> {
  const splitter = new SseSplitter(isFinal ?? undefined)
  const pieces = chunks.flatMap((chunk) => splitter.push(chunk))
  const rest = splitter.flush()
  if (rest) pieces.push(rest)
  const out = pieces.map((piece) => ({ text: text(piece.bytes), complete: piece.complete, dispatches: piece.dispatches, event: piece.event, terminal: piece.terminal }))
  // A CRLF split between two chunks leaves its LF at the start of the next block.
  out.forEach((piece, i) => {
    const previous = out[i - 1]
    if (previous?.text.endsWith('\r') && piece.text.startsWith('\n')) {
      previous.text += '\n'
      piece.text = piece.text.slice(1)
    }
  })
  return out.filter((piece) => piece.text !== '')
}

/** Every way of cutting `stream` in two, plus one byte at a time. */
function splits(stream: string): Uint8Array[][] {
  const bytes = Buffer.from(stream, 'utf8')
  const ways: Uint8Array[][] = []
  for (let at = 0; at <= bytes.length; at++) ways.push([bytes.subarray(0, at), bytes.subarray(at)])
  ways.push([...bytes].map((byte) => Uint8Array.of(byte)))
  return ways
}

const OPENAI_CHAT = [
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-x","choices":[{"index":0,"delta":{"content":"Hé"}}]}\n\n',
  ': keep-alive\n\n',
  'data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-x","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n',
  'data: [DONE]\n\n',
]

const ANTHROPIC_CRLF = [
  'event: message_start\r\ndata: {"type":"message_start","message":{"model":"claude-x"}}\r\n\r\n',
  'event: ping\r\ndata: {"type": "ping"}\r\n\r\n',
  'event: message_delta\r\ndata: {"type":"message_delta","usage":{"output_tokens":5}}\r\n\r\n',
  'event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n',
]

describe('SseSplitter', () => {
  it('splits OpenAI chat chunks into blocks at every chunk boundary, keeping the bytes', () => {
    for (const chunks of splits(OPENAI_CHAT.join(''))) {
      expect(split(chunks)).toEqual([
        { text: OPENAI_CHAT[0], complete: true, dispatches: true, event: null, terminal: false },
        { text: OPENAI_CHAT[1], complete: true, dispatches: false, event: null, terminal: false },
        { text: OPENAI_CHAT[2], complete: true, dispatches: true, event: null, terminal: false },
        { text: OPENAI_CHAT[3], complete: true, dispatches: true, event: null, terminal: true },
      ])
    }
  })

  it('reads event names and CRLF line breaks, and recognises message_stop as terminal', () => {
    for (const chunks of splits(ANTHROPIC_CRLF.join(''))) {
      expect(split(chunks).map((p) => [p.text, p.event, p.terminal])).toEqual([
        [ANTHROPIC_CRLF[0], 'message_start', false],
        [ANTHROPIC_CRLF[1], 'ping', false],
        [ANTHROPIC_CRLF[2], 'message_delta', false],
        [ANTHROPIC_CRLF[3], 'message_stop', true],
      ])
    }
  })

  it('recognises a Responses API completion by its data type when no event name is sent', () => {
    const stream = 'data: {"type":"response.created","response":{}}\n\ndata: {"type":"response.completed","response":{"usage":{}}}\n\n'
    for (const chunks of splits(stream)) expect(split(chunks).map((p) => p.terminal)).toEqual([false, true])
  })

  it('accepts CR line breaks, a byte order mark and multi-line data', () => {
    const stream = '\uFEFFevent: response.completed\rdata: {"a":\rdata: 1}\r\r: c\n\n'
    for (const chunks of splits(stream)) {
      expect(split(chunks).map((p) => [p.event, p.dispatches, p.terminal, p.complete])).toEqual([
        ['response.completed', true, true, true],
        [null, false, false, true],
      ])
    }
  })

  it('marks no event final without a final-event test: SSE itself has no final event', () => {
    for (const chunks of splits(OPENAI_CHAT.join(''))) expect(split(chunks, null).map((p) => p.terminal)).toEqual([false, false, false, false])
  })

  it('marks the events the given test names final, as a plug-in for another protocol would', () => {
    const stream = 'event: progress\ndata: {"n":1}\n\nevent: end\ndata: {"ok":true}\n\n'
    for (const chunks of splits(stream)) expect(split(chunks, (event) => event === 'end').map((p) => [p.event, p.terminal])).toEqual([['progress', false], ['end', true]])
  })

  it('returns an unfinished block as an incomplete piece at the end', () => {
    for (const chunks of splits('data: one\n\ndata: tw')) {
      expect(split(chunks).map((p) => [p.text, p.complete, p.dispatches])).toEqual([
        ['data: one\n\n', true, true],
        ['data: tw', false, true],
      ])
    }
  })

  it('passes an oversized block on in pieces instead of holding it', () => {
    const splitter = new SseSplitter()
    const big = new Uint8Array(MAX_HELD_BYTES + 10).fill(0x61)
    expect(splitter.push(Buffer.from('data: '))).toEqual([])
    const pieces = splitter.push(big)
    expect(pieces).toHaveLength(1)
    expect(pieces[0]).toMatchObject({ complete: false, dispatches: true })
    expect(pieces[0]!.bytes.length).toBe(MAX_HELD_BYTES + 16)
    expect(splitter.push(Buffer.from('\n\n')).map((p) => [text(p.bytes), p.complete])).toEqual([['\n\n', true]])
  })
})
