/**
 * What a recorder finds where it is told to write, and what it makes of it before the first
 * exchange: a recording never replaces a cassette it did not write. It appends as the next
 * segment of the same cassette, or (`overwrite`) replaces it, and says which.
 *
 * | found | done |
 * |---|---|
 * | nothing | a new cassette: its header written now (atomically), so the file is valid at once |
 * | a version 4 cassette | appended to: an interrupted last line (a `kill -9` mid-write) is cut off first |
 * | a version 1–3 cassette (or a version 4 one written whole: its header counts its exchanges) | rewritten once as append-only version 4 (atomically), with the lines of a journal an older recorder left beside it, then appended to |
 * | a journal alone (an older recorder killed before its first snapshot) | its lines become the new cassette's first segment |
 * | another file, or a cassette with other matching options | refused (`ERR_CASSETTE_EXISTS`), untouched |
 * | anything, with `overwrite` | replaced by a new cassette |
 */
import { promises as fs } from 'node:fs'
import path from 'node:path'
import { CassetteError, ToolstormError } from '../../errors.js'
import { isDeepStrictEqual } from 'node:util'
import { readJsonLines } from '../../io/read-json-lines.js'
import { writeLinesAtomic } from '../../io/write-lines-atomic.js'
import { docsUrl } from '../../docs-url.js'
import type { CassetteFileHeader, CassetteHeader } from '../format/cassette-schema.js'
import { Cassette, claimsLines, fileHeader } from '../format/cassette.js'
import { CassetteValidator } from '../format/cassette-validator.js'
import type { EndLine, SegmentLine } from '../format/segment-lines.js'

/** What the recorder did with the file it was given, and the line it prints. */
export interface RecordingStart {
  /** `created`: a new cassette. `appended`: its exchanges follow the existing ones, as a new segment. `replaced`: `overwrite`. */
  readonly action: 'created' | 'appended' | 'replaced'
  readonly file: string
  /** Exchanges the file held before (for `replaced`: the ones dropped). */
  readonly previous: number
  /** The segment this recording writes (1 in a new cassette). */
  readonly segment: number
  /** Exchanges recovered from a journal an older toolstorm left beside the cassette. */
  readonly recovered: number
  /** Bytes of an interrupted last line, cut off before appending. */
  readonly interruptedBytes: number
  /** The version the cassette had, when it was rewritten as the current one. */
  readonly convertedFrom: number | null
  /** One line saying all of that, for a log. */
  readonly message: string
}

/** Where the recorder appends, once the file is ready. */
export interface OpenedCassette {
  readonly start: RecordingStart
  /** Exchanges before this recording's first one. */
  readonly after: number
  /** Bytes of the file: where the next line goes. */
  readonly size: number
}

/** The journal an older recorder (toolstorm before cassette version 4) kept beside the cassette. */
export function legacyJournalFor(cassette: string): string {
  return path.join(path.dirname(path.resolve(cassette)), `.${path.basename(cassette)}.toolstorm-journal`)
}

const SEQ_LINE = Buffer.from('{"seq":')
const SEGMENT_LINE = Buffer.from('{"line":"segment"')

function refuse(file: string, reason: string): never {
  throw new CassetteError('ERR_CASSETTE_EXISTS', `Failed to record into ${file}: ${reason}. Nothing was written. Record into another file, or pass --overwrite (overwrite: true) to replace it. See ${docsUrl('cassettes.md#recording-into-an-existing-cassette')}.`)
}

function unwritable(file: string, error: unknown): ToolstormError {
  const code = (error as NodeJS.ErrnoException).code ?? String(error)
  return new ToolstormError('ERR_FILE_UNWRITABLE', `Failed to start recording: cannot write ${file} (${code}). Record into a folder you can write to.`, { cause: error })
}

/** The complete lines of a journal (an interrupted last line is not one). */
async function journalLines(journal: string): Promise<string[]> {
  const lines: string[] = []
  try {
    for await (const { text } of readJsonLines(journal, { maxBytes: Number.MAX_SAFE_INTEGER, maxLineBytes: () => Number.MAX_SAFE_INTEGER, invalidCode: 'ERR_CASSETTE_INVALID', partialLastLine: () => true })) lines.push(text)
  } catch (error) {
    if ((error as ToolstormError).code === 'ERR_FILE_UNREADABLE') return []
    throw error
  }
  return lines
}

/** Exchange lines renumbered from `after + 1`, in order (a journal's own positions start at 1). */
function renumbered(lines: readonly string[], after: number): string[] {
  return lines.map((line, index) => line.replace(/^\{"seq":\d+,/, `{"seq":${after + index + 1},`))
}

/**
 * How a journal relates to the cassette beside it: its first lines are the cassette's exchanges
 * (the cassette was its last snapshot) and the rest came after; or it is a later recording whose
 * first snapshot never happened, all of it new.
 */
function journalContinues(cassette: Cassette, lines: readonly string[]): boolean {
  if (lines.length < cassette.exchanges.length) return false
  return cassette.exchanges.every((exchange, index) => {
    const line = JSON.parse(lines[index] as string) as { seq: number; run: string; call: number | null; started: number; request: { url: string } }
    return line.seq === exchange.seq && line.run === exchange.run && line.call === exchange.call && line.started === exchange.started && line.request.url === exchange.request.url
  })
}

/** Counts a version 4 file's exchanges and segments by the first bytes of each complete line (no parsing), and where its complete lines end. */
async function scanCassette(file: string): Promise<{ exchanges: number; segments: number; size: number; complete: number }> {
  const handle = await fs.open(file, 'r')
  const want = SEGMENT_LINE.length
  let exchanges = 0
  let segments = 1
  let complete = 0
  let position = 0
  // The first bytes of the line being read.
  let prefix = Buffer.alloc(0)
  try {
    const buffer = Buffer.alloc(1024 * 1024)
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position)
      if (bytesRead === 0) break
      const chunk = buffer.subarray(0, bytesRead)
      for (let i = 0; ; ) {
        const newline = chunk.indexOf(0x0a, i)
        const end = newline === -1 ? chunk.length : newline
        if (prefix.length < want) prefix = Buffer.concat([prefix, chunk.subarray(i, Math.min(end, i + want - prefix.length))])
        if (newline === -1) break
        if (prefix.subarray(0, SEQ_LINE.length).equals(SEQ_LINE)) exchanges++
        else if (prefix.equals(SEGMENT_LINE)) segments++
        complete = position + newline + 1
        prefix = Buffer.alloc(0)
        i = newline + 1
      }
      position += bytesRead
    }
    return { exchanges, segments, size: position, complete }
  } finally {
    await handle.close()
  }
}

/** The header a file starts with, validated; null when the file is not a cassette (with why). */
async function readHeader(file: string): Promise<{ header: CassetteFileHeader | null; problem: string | null; version: number }> {
  const validator = new CassetteValidator(file)
  try {
    for await (const { text, number } of readJsonLines(file, { maxBytes: Number.MAX_SAFE_INTEGER, maxLineBytes: () => 64 * 1024 * 1024, invalidCode: 'ERR_CASSETTE_INVALID', partialLastLine: () => true })) {
      validator.line(text, number)
      break
    }
  } catch (error) {
    if (!(error instanceof ToolstormError) || error.code === 'ERR_FILE_UNREADABLE') throw error
    return { header: null, problem: error.message.replace(/^Failed to load the cassette [^:]*: /, '').replace(/\. Record it again.*$/, ''), version: 0 }
  }
  const header = validator.header
  if (!header) return { header: null, problem: 'it is empty', version: 0 }
  return { header, problem: null, version: header.version }
}

function describe(start: Omit<RecordingStart, 'message'>): string {
  const notes = [
    ...(start.convertedFrom !== null ? [`rewritten from cassette version ${start.convertedFrom} to the append-only version 4`] : []),
    ...(start.recovered ? [`${start.recovered} exchange(s) recovered from the journal an older toolstorm left beside it`] : []),
    ...(start.interruptedBytes ? [`an interrupted last line (${start.interruptedBytes} bytes, no newline: a write cut short) was dropped`] : []),
  ]
  const tail = notes.length ? `; ${notes.join('; ')}` : ''
  switch (start.action) {
    case 'created':
      return `recording into a new cassette ${start.file}${tail}`
    case 'replaced':
      return `replacing the cassette ${start.file} (${start.previous} exchanges) because of --overwrite${tail}`
    case 'appended':
      return `appending to the cassette ${start.file} (${start.previous} exchanges already recorded) as segment ${start.segment}; --overwrite replaces it instead${tail}`
  }
}

function started(start: Omit<RecordingStart, 'message'>): RecordingStart {
  return { ...start, message: describe(start) }
}

/**
 * Get `file` ready for a recording with `header` (its settings) to append to, as the table above
 * says. The file is valid before and after, whatever happens in between (every rewrite is atomic).
 */
export async function openCassetteFile(file: string, header: CassetteHeader, options: { overwrite?: boolean } = {}): Promise<OpenedCassette> {
  const journal = legacyJournalFor(file)
  let stat
  try {
    stat = await fs.stat(file)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw unwritable(file, error)
  }
  if (stat?.isDirectory()) refuse(file, 'it is a directory')
  const base = { file, recovered: 0, interruptedBytes: 0, convertedFrom: null }
  // A journal alone is an older recorder's, killed before its first snapshot: its lines are segment 1, this recording segment 2.
  const fresh = async (action: 'created' | 'replaced', previous: number, recovered: string[] = []): Promise<OpenedCassette> => {
    const lines = [JSON.stringify(fileHeader(header)), ...renumbered(recovered, 0)]
    try {
      await writeLinesAtomic(file, lines)
    } catch (error) {
      throw unwritable(file, error)
    }
    await fs.rm(journal, { force: true })
    const size = (await fs.stat(file)).size
    return { start: started({ ...base, action, previous, segment: recovered.length ? 2 : 1, recovered: recovered.length }), after: recovered.length, size }
  }
  if (!stat) return fresh('created', 0, options.overwrite ? [] : await journalLines(journal))
  const { header: found, problem, version } = await readHeader(file)
  if (options.overwrite) {
    const previous = found ? (version >= 4 ? (await scanCassette(file)).exchanges : (found.exchanges ?? 0)) : 0
    return fresh('replaced', previous)
  }
  if (!found) refuse(file, `it exists and is not a toolstorm cassette (${problem})`)
  if (!isDeepStrictEqual(found.match, header.match)) {
    refuse(file, `it is a cassette recorded with other matching options (${JSON.stringify(found.match)}, this recording: ${JSON.stringify(header.match)}), so its replay would match the two recordings' exchanges differently`)
  }
  try {
    await fs.access(file, fs.constants.W_OK)
  } catch (error) {
    throw unwritable(file, error)
  }
  // Older versions, and a version 4 file written whole (its header counts its exchanges), are rewritten once as append-only.
  if (version < 4 || found.exchanges !== undefined || found.claims !== undefined) return convert(file, journal, header)
  // A version 4 file written by a toolstorm killed mid-line ends in a partial line: cut it off.
  const scan = await scanCassette(file)
  if (scan.complete < scan.size) await fs.truncate(file, scan.complete)
  await fs.rm(journal, { force: true })
  return { start: started({ ...base, action: 'appended', previous: scan.exchanges, segment: scan.segments + 1, interruptedBytes: scan.size - scan.complete }), after: scan.exchanges, size: scan.complete }
}

/**
 * A version 1–3 cassette becomes version 4 in one atomic rewrite: its exchange lines as they are
 * (bodies in files stay there), its claims, then the lines of a journal an older recorder left:
 * the rest of the same recording when the journal's first lines are the cassette's (it was killed
 * between snapshots), else a recording of its own, as a segment after the cassette's end.
 */
async function convert(file: string, journal: string, header: CassetteHeader): Promise<OpenedCassette> {
  const cassette = await Cassette.load(file)
  const extra = await journalLines(journal)
  const continues = extra.length > 0 && journalContinues(cassette, extra)
  const tail = continues ? extra.slice(cassette.exchanges.length) : extra
  const count = cassette.exchanges.length
  const raw = await rawExchangeLines(file)
  const end: EndLine = { line: 'end', ended: new Date().toISOString(), exchanges: count }
  const lines = [
    JSON.stringify(fileHeader({ ...cassette.header, version: 4 })),
    ...raw,
    ...claimsLines(cassette.header.claims ?? []).map((line) => JSON.stringify(line)),
    ...(continues ? [] : [JSON.stringify(end)]),
    ...(tail.length && !continues ? [JSON.stringify({ line: 'segment', started: header.recorded, after: count, settings: settingsOf(header), recovered: 'journal' } satisfies SegmentLine)] : []),
    ...renumbered(tail, count),
  ]
  try {
    await writeLinesAtomic(file, lines)
  } catch (error) {
    throw unwritable(file, error)
  }
  await fs.rm(journal, { force: true })
  const total = count + tail.length
  const size = (await fs.stat(file)).size
  const start = started({ file, action: 'appended', previous: total, segment: tail.length && !continues ? 3 : 2, recovered: tail.length, interruptedBytes: 0, convertedFrom: cassette.header.version < 4 ? cassette.header.version : null })
  return { start, after: total, size }
}

/** A version 1–3 file's exchange lines as they are (bodies in files stay in files). */
async function rawExchangeLines(file: string): Promise<string[]> {
  const lines: string[] = []
  for await (const { text, number } of readJsonLines(file, { maxBytes: Number.MAX_SAFE_INTEGER, maxLineBytes: () => Number.MAX_SAFE_INTEGER, invalidCode: 'ERR_CASSETTE_INVALID' })) if (number > 1) lines.push(text)
  return lines
}

/** The settings a segment line keeps of a header. */
export function settingsOf(header: CassetteHeader): SegmentLine['settings'] {
  const { toolstorm, source, targets, seed, clock, maxCalls, routes, rules, bodyLimit, redaction } = header
  return { toolstorm, source, targets, seed, clock, maxCalls, routes, rules, bodyLimit, redaction }
}
