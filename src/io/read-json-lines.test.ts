import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readJsonLines, type JsonLinesLimits } from './read-json-lines.js'

/** The reader's chunk size: what these tests straddle. */
const CHUNK = 1024 * 1024
const limits: JsonLinesLimits = { maxBytes: 64 * CHUNK, maxLineBytes: () => 8 * CHUNK, invalidCode: 'ERR_CASSETTE_INVALID' }

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-lines-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

async function read(bytes: Buffer | string, options: JsonLinesLimits = limits): Promise<Array<{ text: string; number: number }>> {
  const file = path.join(dir, `f-${Math.random().toString(36).slice(2)}.jsonl`)
  await writeFile(file, bytes)
  const lines = []
  for await (const line of readJsonLines(file, options)) lines.push(line)
  return lines
}

describe('readJsonLines', () => {
  it('keeps a multi-byte character that straddles two read chunks whole', async () => {
    // The 4-byte emoji starts 2 bytes before the first chunk ends.
    const first = JSON.stringify({ pad: 'p'.repeat(CHUNK - 10) }).slice(0, -2)
    const text = `${first}\u{1F600}"}\n{"n":2}\n`
    expect(Buffer.from(text).indexOf(Buffer.from('\u{1F600}'))).toBe(CHUNK - 2)
    const lines = await read(text)
    expect(lines.map((l) => l.number)).toEqual([1, 2])
    expect((JSON.parse(lines[0]!.text) as { pad: string }).pad.endsWith('p\u{1F600}')).toBe(true)
    expect(lines[1]!.text).toBe('{"n":2}')
  })

  it('joins a line longer than a chunk from all its pieces', async () => {
    const long = JSON.stringify({ body: 'é'.repeat(CHUNK) })
    const lines = await read(`{"n":1}\n${long}\n{"n":3}\r\n`)
    expect(lines.map((l) => l.text)).toEqual(['{"n":1}', long, '{"n":3}'])
  })

  it('names the line of invalid UTF-8 in a later chunk', async () => {
    const filler = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ i, pad: 'x'.repeat(400) })).join('\n') + '\n'
    const before = filler.split('\n').length - 1
    const bytes = Buffer.concat([Buffer.from(filler), Buffer.from('{"bad":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}\n{"n":1}\n')])
    expect(bytes.length).toBeGreaterThan(CHUNK)
    await expect(read(bytes)).rejects.toMatchObject({ code: 'ERR_CASSETTE_INVALID', message: expect.stringContaining(`line ${before + 1} is not valid UTF-8`) })
  })

  it('refuses a last line cut inside a character as invalid UTF-8, and one cut after it as truncated', async () => {
    await expect(read(Buffer.concat([Buffer.from('{"n":1}\n{"s":"'), Buffer.from([0xf0, 0x9f])]))).rejects.toMatchObject({ message: expect.stringContaining('line 2 is not valid UTF-8') })
    await expect(read('{"n":1}\n{"s":"é"')).rejects.toMatchObject({ message: expect.stringContaining('line 2 ends without a newline, so the file is truncated') })
  })

  it('refuses a line over the limit before reading the rest of it', async () => {
    const small = { ...limits, maxLineBytes: (n: number) => (n === 1 ? 100 : CHUNK / 2) }
    await expect(read(`${'x'.repeat(101)}\n`, small)).rejects.toMatchObject({ code: 'ERR_INPUT_TOO_LARGE', message: expect.stringContaining('line 1 is longer than 100 bytes') })
    // Line 2 never ends within the first chunk: refused on the carried bytes alone.
    await expect(read(`{"n":1}\n${'y'.repeat(2 * CHUNK)}`, small)).rejects.toMatchObject({ code: 'ERR_INPUT_TOO_LARGE', message: expect.stringContaining('line 2 is longer than') })
  })

  it('counts a line limit in bytes, not characters', async () => {
    const small = { ...limits, maxLineBytes: () => 100 }
    // 60 characters, 120 bytes.
    await expect(read(`${'é'.repeat(60)}\n`, small)).rejects.toMatchObject({ code: 'ERR_INPUT_TOO_LARGE' })
    expect(await read(`${'e'.repeat(60)}\n`, small)).toHaveLength(1)
  })
})
