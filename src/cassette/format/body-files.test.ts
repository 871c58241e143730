import { randomBytes } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CassetteError, type ToolstormError } from '../../errors.js'
import { asOlderVersion, exchangeAt } from '../../../test/helpers/cassette-fixtures.js'
import type { CassetteExchange, StoredBody } from './cassette-schema.js'
import { BODY_FILE_THRESHOLD, bodiesFolderFor } from './body-files.js'
import { Cassette } from './cassette.js'

let dir: string
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-body-files-'))
})
afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

const binary = (bytes: Buffer, truncated = false): StoredBody => ({ encoding: 'base64', data: bytes.toString('base64'), size: bytes.length + (truncated ? 1000 : 0), truncated })
const text = (data: string): StoredBody => ({ encoding: 'utf8', data, size: Buffer.byteLength(data), truncated: false })
const withBody = (seq: number, body: StoredBody | null, request: StoredBody | null = null): CassetteExchange =>
  exchangeAt(seq, { request: { method: 'POST', url: `/items/${seq}`, headers: {}, body: request }, response: { status: 200, headers: { 'content-type': 'application/octet-stream' }, body } })

async function lines(file: string): Promise<Array<Record<string, any>>> {
  return (await readFile(file, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as Record<string, any>)
}

async function refusal(file: string): Promise<ToolstormError> {
  try {
    await Cassette.load(file)
  } catch (error) {
    expect(error).toBeInstanceOf(CassetteError)
    return error as ToolstormError
  }
  throw new Error('expected a refusal')
}

describe('body files beside a cassette', () => {
  it('keeps bodies over 64 KiB in content-addressed files (gzip when it helps) and loads them back byte for byte', async () => {
    const file = path.join(dir, 'large.cassette.jsonl')
    const random = randomBytes(200_000)
    const json = JSON.stringify({ rows: Array.from({ length: 5000 }, (_, i) => ({ id: i, name: `item ${i}` })) })
    const upload = randomBytes(BODY_FILE_THRESHOLD + 1)
    const cassette = Cassette.from({}, [withBody(1, binary(random, true)), withBody(2, text(json), binary(upload)), withBody(3, binary(randomBytes(BODY_FILE_THRESHOLD)))])
    await cassette.save(file)

    const [header, first, second, third] = await lines(file)
    expect(header!.version).toBe(4)
    expect(first!.response.body).toEqual({ encoding: 'base64', file: expect.stringMatching(/^sha256-[0-9a-f]{64}$/), bytes: 200_000, size: 201_000, truncated: true })
    expect(second!.response.body).toEqual({ encoding: 'utf8', file: expect.stringMatching(/^sha256-[0-9a-f]{64}\.gz$/), bytes: Buffer.byteLength(json), size: Buffer.byteLength(json), truncated: false })
    expect(second!.request.body.file).toMatch(/^sha256-[0-9a-f]{64}$/)
    // Exactly the threshold stays inline.
    expect(third!.response.body.data).toBeTypeOf('string')
    const folder = bodiesFolderFor(file)
    expect(folder).toBe(path.join(dir, 'large.cassette.bodies'))
    expect((await readdir(folder)).sort()).toEqual([first!.response.body.file, second!.request.body.file, second!.response.body.file].sort())
    expect(((await stat(path.join(folder, first!.response.body.file as string))).mode & 0o777).toString(8)).toBe('600')
    // The random bytes do not shrink: stored as they are. The JSON does.
    expect((await stat(path.join(folder, first!.response.body.file as string))).size).toBe(200_000)
    expect((await stat(path.join(folder, second!.response.body.file as string))).size).toBeLessThan(Buffer.byteLength(json) / 4)

    const loaded = await Cassette.load(file)
    expect(loaded.exchanges).toEqual(cassette.exchanges)
  })

  it('removes the files a rewritten cassette no longer refers to, and leaves other files alone', async () => {
    const file = path.join(dir, 'rewritten.cassette.jsonl')
    const folder = bodiesFolderFor(file)
    await Cassette.from({}, [withBody(1, binary(randomBytes(100_000))), withBody(2, binary(randomBytes(100_000)))]).save(file)
    const kept = (await lines(file))[2]!.response.body.file as string
    const second = Cassette.from({}, [withBody(1, (await Cassette.load(file)).exchanges[1]!.response!.body)])
    await second.save(file)
    expect(await readdir(folder)).toEqual([kept])
    await writeFile(path.join(folder, 'notes.txt'), 'mine')
    await Cassette.from({}, [withBody(1, text('small'))]).save(file)
    expect(await readdir(folder)).toEqual(['notes.txt'])
    await rm(path.join(folder, 'notes.txt'))
    await Cassette.from({}, [withBody(1, text('small'))]).save(file)
    await expect(stat(folder)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('refuses a cassette whose body file is missing, naming the cassette, the exchange and the file', async () => {
    const file = path.join(dir, 'missing.cassette.jsonl')
    await Cassette.from({}, [exchangeAt(1), withBody(2, binary(randomBytes(100_000)))]).save(file)
    const name = (await lines(file))[2]!.response.body.file as string
    await rm(path.join(bodiesFolderFor(file), name))
    const error = await refusal(file)
    expect(error.code).toBe('ERR_CASSETTE_BODY_FILE')
    expect(error.exitCode).toBe(2)
    expect(error.message).toBe(
      `Failed to load the cassette ${file}: line 3 (exchange 2, GET /items/:id): $.response.body: the body file ${path.join(bodiesFolderFor(file), name)} is missing. Keep the folder missing.cassette.bodies beside the cassette (copy or move them together), or record it again (see https://github.com/toolstorm/toolstorm/blob/main/docs/cassettes.md).`,
    )
  })

  it('refuses a damaged body file: other bytes, a shorter file, broken gzip', async () => {
    const file = path.join(dir, 'damaged.cassette.jsonl')
    const json = 'x'.repeat(100_000)
    await Cassette.from({}, [withBody(1, binary(randomBytes(100_000))), withBody(2, text(json))]).save(file)
    const [, first, second] = await lines(file)
    const folder = bodiesFolderFor(file)
    const plain = path.join(folder, first!.response.body.file as string)
    const original = await readFile(plain)
    const flipped = Buffer.from(original)
    flipped[5000] = (flipped[5000] as number) ^ 0xff
    await writeFile(plain, flipped)
    expect((await refusal(file)).message).toContain(`line 2 (exchange 1, GET /items/:id): $.response.body: the body file ${plain} is damaged: it should hold 100000 bytes with the SHA-256 its name says, and holds 100000 byte(s) with another digest.`)
    await writeFile(plain, original.subarray(0, 10))
    expect((await refusal(file)).message).toContain('is damaged: it should hold 100000 bytes with the SHA-256 its name says, and holds 10 byte(s).')
    await writeFile(plain, original)
    await writeFile(path.join(folder, second!.response.body.file as string), 'not gzip')
    const error = await refusal(file)
    expect(error.code).toBe('ERR_CASSETTE_BODY_FILE')
    expect(error.message).toContain('line 3 (exchange 2, GET /items/:id): $.response.body: the body file')
    expect(error.message).toContain('is damaged (not the gzip data it should be)')
  })

  it('refuses a body file in a version 1 cassette, and body files in text parsed without its folder', async () => {
    const file = path.join(dir, 'v1.cassette.jsonl')
    await Cassette.from({}, [withBody(1, binary(randomBytes(100_000)))]).save(file)
    const saved = await readFile(file, 'utf8')
    await writeFile(file, asOlderVersion(saved, 1))
    const error = await refusal(file)
    expect(error.code).toBe('ERR_CASSETTE_INVALID')
    expect(error.message).toContain('line 2: $.response.body.file: a body in a body file needs cassette version 2 (the header says 1)')
    expect(() => Cassette.parse(saved, 'text')).toThrow('Failed to load the cassette text: line 2: a body is in a body file beside the cassette, and text holds no files. Load it from its file with Cassette.load(), which reads them.')
  })

  it('still reads version 1 cassettes, every body inline, and writes them as the current version', async () => {
    const file = path.join(dir, 'old.cassette.jsonl')
    const big = binary(randomBytes(100_000))
    const current = Cassette.from({}, [withBody(1, big)])
    await writeFile(file, asOlderVersion(current.toString(), 1))
    const old = await Cassette.load(file)
    expect(old.header.version).toBe(1)
    expect(old.exchanges).toEqual(current.exchanges)
    await old.save(file)
    const [header, line] = await lines(file)
    expect(header!.version).toBe(4)
    expect(line!.response.body.file).toMatch(/^sha256-/)
    expect((await Cassette.load(file)).exchanges).toEqual(current.exchanges)
  })
})
