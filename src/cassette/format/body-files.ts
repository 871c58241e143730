/**
 * Large bodies in files beside the cassette (version 2), so the JSON Lines stay readable and
 * quick to load however large the bodies are: `incident.cassette.jsonl` keeps each body of more
 * than 64 KiB in `incident.cassette.bodies/sha256-<hex>`, named after the SHA-256 of the stored
 * bytes, gzip-compressed (`….gz`) when that makes it markedly smaller. The line keeps the body's
 * metadata and `file`, `bytes` in place of `data`.
 *
 * - Written before the cassette: each file atomically (temporary file, fsync, rename), then the
 *   folder is fsynced, then the cassette is renamed into place. A crash leaves the previous
 *   cassette with its files, or the new one with its files. Files are only added while a
 *   cassette is rewritten; those no line refers to any more are removed once it is written.
 * - Verified on load: a file that is missing, or does not hold the bytes its name and the line
 *   say, stops the load with `ERR_CASSETTE_BODY_FILE`, naming the cassette, the exchange and the file.
 * - In memory every body is inline: replay, matching and HAR export never see a body file.
 *
 * @example
 * const writer = new BodyFileWriter(bodiesFolderFor('incident.cassette.jsonl'))
 * const line = JSON.stringify(await writer.exchange(exchange))
 */
import { createHash, randomBytes } from 'node:crypto'
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import zlib from 'node:zlib'
import { CassetteError, ToolstormError } from '../../errors.js'
import { BODY_FILE_NAME, type CassetteExchange, type CassetteFileExchange, type StoredBody, type StoredBodyFile } from './cassette-schema.js'
import { docsUrl } from '../../docs-url.js'

/** Bodies with more stored bytes than this go into a file. */
export const BODY_FILE_THRESHOLD = 64 * 1024

const gzip = promisify(zlib.gzip)
const gunzip = promisify(zlib.gunzip)
/** Bytes of a body tried first: the whole body is compressed only when they shrink to 3/4 or less. */
const COMPRESSION_SAMPLE = 64 * 1024
const TEMP_FILE = /^\.toolstorm-[0-9a-f]{12}\.tmp$/

/** The folder of `cassette`'s body files: its name without `.jsonl`, plus `.bodies`. */
export function bodiesFolderFor(cassette: string): string {
  return cassette.replace(/\.jsonl$/i, '') + '.bodies'
}

/** Bytes a stored body holds. */
function storedLength(body: StoredBody): number {
  if (body.encoding === 'base64') {
    const data = body.data
    const padding = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0
    return (data.length / 4) * 3 - padding
  }
  // A UTF-16 code unit takes 1 to 3 bytes in UTF-8: only strings in between need counting.
  if (body.data.length > BODY_FILE_THRESHOLD) return BODY_FILE_THRESHOLD + 1
  if (body.data.length * 3 <= BODY_FILE_THRESHOLD) return body.data.length
  return Buffer.byteLength(body.data, 'utf8')
}

function goesToFile(body: StoredBody | null): body is StoredBody {
  return body !== null && storedLength(body) > BODY_FILE_THRESHOLD
}

/** Whether writing `exchange` to a file makes a body file. */
function hasLargeBody(exchange: CassetteExchange): boolean {
  return goesToFile(exchange.request.body) || goesToFile(exchange.response?.body ?? null) || goesToFile(exchange.upstream?.body ?? null)
}

function isBodyFile(body: StoredBody | StoredBodyFile | null): body is StoredBodyFile {
  return body !== null && 'file' in body
}

/** Whether a file line points to a body file. */
export function hasBodyFiles(exchange: CassetteFileExchange): boolean {
  return isBodyFile(exchange.request.body) || isBodyFile(exchange.response?.body ?? null) || isBodyFile(exchange.upstream?.body ?? null)
}

/** Writes the body files of one cassette's folder. */
export class BodyFileWriter {
  readonly folder: string
  /** Files the lines written so far refer to. */
  readonly referenced = new Set<string>()
  readonly #writing = new Map<string, Promise<void>>()
  #wrote = false

  constructor(folder: string) {
    this.folder = folder
  }

  /** `exchange` as a file line holds it: each body over the threshold in a file (written now). */
  async exchange(exchange: CassetteExchange): Promise<CassetteFileExchange> {
    if (!hasLargeBody(exchange)) return exchange
    const request = { ...exchange.request, body: await this.body(exchange.request.body) }
    const response = exchange.response && { ...exchange.response, body: await this.body(exchange.response.body) }
    const upstream = exchange.upstream && { ...exchange.upstream, body: await this.body(exchange.upstream.body) }
    return { ...exchange, request, response, upstream }
  }

  /** A stored body as a file line holds it: inline when small, else in a file. */
  async body(body: StoredBody | null): Promise<StoredBody | StoredBodyFile | null> {
    if (!goesToFile(body)) return body
    const bytes = Buffer.from(body.data, body.encoding)
    const { data: _data, ...meta } = body
    const file = await this.#put(bytes)
    // Key order as the schema lists it, so a file line reads the same whichever writer made it.
    return { encoding: meta.encoding, file, bytes: bytes.length, size: meta.size, truncated: meta.truncated, ...(meta.decoded ? { decoded: meta.decoded } : {}) }
  }

  async #put(bytes: Buffer): Promise<string> {
    const digest = createHash('sha256').update(bytes).digest('hex')
    const compressed = worthCompressing(bytes)
    const file = `sha256-${digest}${compressed ? '.gz' : ''}`
    this.referenced.add(file)
    let writing = this.#writing.get(file)
    if (!writing) {
      // Always written, never trusted because the name exists: a damaged file is replaced.
      writing = (async () => this.#write(file, compressed ? await gzip(bytes) : bytes))()
      this.#writing.set(file, writing)
    }
    await writing
    return file
  }

  async #write(file: string, content: Buffer): Promise<void> {
    const temp = path.join(this.folder, `.toolstorm-${randomBytes(6).toString('hex')}.tmp`)
    try {
      await fs.mkdir(this.folder, { recursive: true, mode: 0o700 })
      const handle = await fs.open(temp, 'wx', 0o600)
      try {
        await handle.writeFile(content)
        await handle.sync()
      } finally {
        await handle.close()
      }
      await fs.rename(temp, path.join(this.folder, file))
    } catch (error) {
      await fs.rm(temp, { force: true }).catch(() => undefined)
      // A full disk, or a file where the folder should be: the line that needs this file cannot be written.
      const code = (error as NodeJS.ErrnoException).code ?? String(error)
      throw new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to write the body file ${path.join(this.folder, file)}: ${code}. The exchanges before it are in the cassette.`, { cause: error })
    }
    this.#wrote = true
  }

  /** Make the files written so far durable (their folder's entries): before the cassette is renamed into place. */
  async sync(): Promise<void> {
    if (!this.#wrote) return
    const folder = await fs.open(this.folder, 'r').catch(() => null)
    if (!folder) return
    await folder.sync().catch(() => undefined)
    await folder.close()
  }

  /**
   * Remove the body files (and temporary files left by a crash) that no line refers to, once the
   * cassette that no longer needs them is in place; the folder too when it is left empty. Other
   * files in the folder are not touched.
   */
  async sweep(): Promise<void> {
    let names: string[]
    try {
      names = await fs.readdir(this.folder)
    } catch {
      return
    }
    let kept = 0
    for (const name of names) {
      if ((BODY_FILE_NAME.test(name) && !this.referenced.has(name)) || TEMP_FILE.test(name)) await fs.rm(path.join(this.folder, name), { force: true })
      else kept++
    }
    if (kept === 0) await fs.rmdir(this.folder).catch(() => undefined)
  }
}

/** Whether gzip makes `bytes` markedly smaller, judged on their first 64 KiB (so the same bytes always get the same name). */
function worthCompressing(bytes: Buffer): boolean {
  const sample = bytes.subarray(0, COMPRESSION_SAMPLE)
  return zlib.gzipSync(sample, { level: 1 }).length <= sample.length * 0.75
}

/** Reads and verifies the body files of one cassette. */
export class BodyFileReader {
  readonly #source: string
  readonly #folder: string

  /** `source`: the cassette, for messages. */
  constructor(source: string, folder: string = bodiesFolderFor(source)) {
    this.#source = source
    this.#folder = folder
  }

  /** `exchange` with every body inline, each read from its file and verified. `line`: where it is, for messages. */
  async exchange(exchange: CassetteFileExchange, line: number): Promise<CassetteExchange> {
    const where = (field: string) => `line ${line} (exchange ${exchange.seq}, ${exchange.route}): ${field}`
    const request = { ...exchange.request, body: await this.#body(exchange.request.body, where('$.request.body')) }
    const response = exchange.response && { ...exchange.response, body: await this.#body(exchange.response.body, where('$.response.body')) }
    const upstream = exchange.upstream && { ...exchange.upstream, body: await this.#body(exchange.upstream.body, where('$.upstream.body')) }
    return { ...exchange, request, response, upstream }
  }

  async #body(body: StoredBody | StoredBodyFile | null, where: string): Promise<StoredBody | null> {
    if (!isBodyFile(body)) return body
    const { file, bytes: length, ...meta } = body
    const bytes = await this.#read(file, length, where)
    return { encoding: meta.encoding, data: bytes.toString(meta.encoding), size: meta.size, truncated: meta.truncated, ...(meta.decoded ? { decoded: meta.decoded } : {}) }
  }

  async #read(file: string, length: number, where: string): Promise<Buffer> {
    const location = path.join(this.#folder, file)
    const fail = (problem: string, cause?: unknown): never => {
      throw new CassetteError('ERR_CASSETTE_BODY_FILE', `Failed to load the cassette ${this.#source}: ${where}: the body file ${location} ${problem}. Keep the folder ${path.basename(this.#folder)} beside the cassette (copy or move them together), or record it again (see ${docsUrl('cassettes.md')}).`, cause === undefined ? undefined : { cause })
    }
    let content: Buffer
    try {
      content = await fs.readFile(location)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      return fail(code === 'ENOENT' ? 'is missing' : `cannot be read (${code ?? String(error)})`, error)
    }
    let bytes = content
    if (file.endsWith('.gz')) {
      try {
        // A file that inflates past the recorded length is damaged: stop there.
        bytes = await gunzip(content, { maxOutputLength: Math.max(1, length + 1) })
      } catch (error) {
        return fail('is damaged (not the gzip data it should be)', error)
      }
    }
    const digest = createHash('sha256').update(bytes).digest('hex')
    if (bytes.length !== length || `sha256-${digest}` !== file.replace(/\.gz$/, '')) {
      fail(`is damaged: it should hold ${length} bytes with the SHA-256 its name says, and holds ${bytes.length} byte(s)${bytes.length === length ? ' with another digest' : ''}`)
    }
    return bytes
  }
}
