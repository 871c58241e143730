import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CassetteError, ToolstormError } from '../../errors.js'
import { exchangeAt } from '../../../test/helpers/cassette-fixtures.js'
import { Cassette, cassetteHeader } from './cassette.js'

function text(exchanges: unknown[], header: Record<string, unknown> = {}): string {
  return [JSON.stringify({ ...cassetteHeader({ recorded: '2025-01-01T00:00:00.000Z' }, exchanges.length), ...header }), ...exchanges.map((e) => JSON.stringify(e))].join('\n') + '\n'
}

function refusal(content: string): string {
  try {
    Cassette.parse(content, 'bad.cassette.jsonl')
  } catch (error) {
    expect(error).toBeInstanceOf(CassetteError)
    expect((error as ToolstormError).code).toBe('ERR_CASSETTE_INVALID')
    return (error as Error).message
  }
  throw new Error('expected a refusal')
}

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-cassette-unit-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('cassettes', () => {
  it('round-trips through save and load with owner-only permissions', async () => {
    const cassette = Cassette.from({ recorded: '2025-01-01T00:00:00.000Z' }, [exchangeAt(1), exchangeAt(2)])
    const file = path.join(dir, 'nested', 'a.cassette.jsonl')
    await cassette.save(file)
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe('600')
    const loaded = await Cassette.load(file)
    expect(loaded.exchanges).toEqual(cassette.exchanges)
    // The header, two exchanges, the end line.
    expect((await readFile(file, 'utf8')).split('\n')).toHaveLength(5)
  })

  it('refuses a wrong version, naming the line and the field', () => {
    expect(refusal(text([exchangeAt(1)], { version: 5 }))).toBe(
      'Failed to load the cassette bad.cassette.jsonl: line 1: $.version: expected cassette version 1, 2, 3 or 4, got 5 (this toolstorm reads versions 1, 2, 3 and 4; a newer toolstorm wrote it?). Record it again, or fix that line (see https://github.com/toolstorm/toolstorm/blob/main/docs/cassettes.md).',
    )
  })

  it('refuses a file that is not a cassette', () => {
    expect(refusal('{"version":1,"kind":"toolstorm.report"}\n')).toContain('line 1: expected the cassette header, an object with "kind": "toolstorm.cassette" (is this a cassette?)')
  })

  it('refuses a truncated file: a line cut short (before version 4), or lines missing', () => {
    const whole = text([exchangeAt(1), exchangeAt(2)], { version: 3 })
    expect(refusal(whole.slice(0, -40))).toContain('line 3 ends without a newline, so the file is truncated')
    const lines = whole.split('\n')
    expect(refusal(lines.slice(0, 2).join('\n') + '\n')).toContain('line 2: the file ends after 1 of the 2 exchange(s) its header declares, so it is truncated')
  })

  it('version 4: reads a last line cut short as an interrupted write (skipped, counted), and checks the end line\'s count', () => {
    const saved = Cassette.from({ recorded: '2025-01-01T00:00:00.000Z' }, [exchangeAt(1), exchangeAt(2)]).toString()
    const lines = saved.split('\n')
    expect(lines[0]).not.toContain('"exchanges"')
    expect(JSON.parse(lines.at(-2) as string)).toMatchObject({ line: 'end', exchanges: 2 })
    const torn = Cassette.parse(lines.slice(0, 3).join('\n') + '\n{"line":"en')
    expect([torn.exchanges.length, torn.interruptedBytes, torn.segments[0]?.ended]).toEqual([2, 11, false])
    expect(refusal([lines[0], lines[1], lines[3], ''].join('\n'))).toContain('line 3: $.exchanges: the end line says 2 exchange(s), but 1 precede it, so lines are missing')
    expect(refusal([...lines.slice(0, 4), JSON.stringify(exchangeAt(3)), ''].join('\n'))).toContain('line 5: an exchange after the end line (a new recording starts with a segment line)')
    expect(refusal([lines[0], '{"line":"effects","seq":9,"effects":[]}', ''].join('\n'))).toContain('line 2: $.effects: too small')
  })

  it('refuses hand edits: unknown fields, duplicate keys, broken sequences, bad base64', () => {
    expect(refusal(text([{ ...exchangeAt(1), note: 'x' }]))).toContain('line 2: $: unknown field "note"')
    expect(refusal(text([exchangeAt(1)]).replace('"seq":1,', '"seq":1,"seq":1,'))).toContain('line 2: $: duplicate key "seq" (column 15)')
    expect(refusal(text([exchangeAt(1), exchangeAt(3, { call: 2, ordinal: 2 })]))).toContain('line 3: $.seq: expected 2 (positions are contiguous)')
    expect(refusal(text([exchangeAt(1), exchangeAt(2, { ordinal: 3 })]))).toContain('line 3: $.ordinal: expected 2 (the running count for route "GET /items/:id" in run "default")')
    expect(refusal(text([exchangeAt(1, { response: { status: 200, headers: {}, body: { encoding: 'base64', data: 'not base64!', size: 3, truncated: false } } })]))).toContain(
      'line 2: $.response.body.data: expected base64 (the encoding says so)',
    )
    expect(refusal(text([exchangeAt(1, { response: { status: 42, headers: {}, body: null } })]))).toContain('line 2: $.response.status: too small')
    expect(refusal(text([exchangeAt(1, { outcome: 'reset' })]))).toContain('line 2: $.response: expected null (the client saw a reset)')
  })

  it('loads a streamed response with its events, and refuses events that do not index the body', () => {
    const body = { encoding: 'utf8' as const, data: 'data: 1\n\ndata: 2\n\n', size: 18, truncated: false }
    const streamed = (stream: unknown) => exchangeAt(1, { response: { status: 200, headers: { 'content-type': 'text/event-stream' }, body, stream } as never })
    const events = [
      { at: 0, bytes: 9 },
      { at: 0.5, bytes: 9 },
    ]
    expect(Cassette.parse(text([streamed({ events, end: 0.5 })])).exchanges[0]?.response?.stream?.events).toEqual(events)
    expect(refusal(text([streamed({ events: events.slice(0, 1), end: 0.5 })]))).toContain(
      'line 2: $.response.stream.events: the events cover 9 byte(s), but the stored body has 18 (each event is a slice of the body, in order).',
    )
    expect(refusal(text([streamed({ events: [...events].reverse(), end: 0.5 })]))).toContain('line 2: $.response.stream.events[1].at: expected at least 0.5 (events are in the order they arrived)')
    expect(refusal(text([streamed({ events, end: 0.1 })]))).toContain("line 2: $.response.stream.events[1].at: expected at most the stream's end (0.1)")
  })

  it('refuses a cut stream without an injected fault', () => {
    expect(refusal(text([exchangeAt(1, { cut: { events: 1, bytes: 9 } })]))).toContain('line 2: $.cut: a cut stream requires an injected fault')
  })

  it('refuses an oversized file and an oversized line before reading them whole', async () => {
    const file = path.join(dir, 'big.cassette.jsonl')
    await writeFile(file, text([exchangeAt(1, { request: { method: 'GET', url: '/' + 'x'.repeat(5000), headers: {}, body: null } })]))
    await expect(Cassette.load(file, { maxBytes: 1000 })).rejects.toMatchObject({ code: 'ERR_INPUT_TOO_LARGE', message: expect.stringMatching(/^Failed to load the cassette .*big\.cassette\.jsonl: it is \d+ bytes, over the limit of 1000 bytes\.$/) })
    await expect(Cassette.load(file, { maxLineBytes: 2000 })).rejects.toMatchObject({ code: 'ERR_INPUT_TOO_LARGE', message: expect.stringContaining('line 2 is longer than 2000 bytes') })
  })

  it('rebuilds one report per run with coverage recomputed from the recorded rules', () => {
    const cassette = Cassette.from({ rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], probability: 1, limit: null, delay: 1, replacement: null }] as never }, [
      exchangeAt(1, { route: 'GET /items/1', ordinal: 1, executed: false, fault: { rule: 'busy', kind: 'rate_limit', phase: 'before-upstream', injected: true }, response: { status: 429, headers: { 'retry-after': '1' }, body: null } }),
      exchangeAt(2, { route: 'GET /items/1', ordinal: 2, effects: [{ name: 'read', key: 'k', at: 0.2, identity: 7, redacted: false }] }),
      exchangeAt(1, { seq: 3, run: 'other', route: 'GET /items/1', ordinal: 1 }),
    ])
    const [main, other] = cassette.toReports()
    expect(main).toMatchObject({ run: 'default', coverage: { busy: { eligible: 1, selected: 1, triggered: 1 } }, effects: [{ name: 'read', call: 2, identity: 1 }] })
    expect(main!.calls.map((call) => call.status)).toEqual([429, 200])
    expect(other).toMatchObject({ run: 'other', calls: [{ id: 1 }] })
  })
})
