/**
 * What `inspect` and `check` read: a cassette (JSON Lines, recognised by its header line) or a
 * report document (a report, a demo run or a comparison).
 */
import { promises as fs } from 'node:fs'
import { demoRunsOf, omittedRuns, replayVerdictOf, reportsFromDocument, type DemoRunFacts, type OmittedRuns } from '../../report/reports-from-document.js'
import { CASSETTE_KIND } from './cassette-schema.js'
import type { Report } from '../../engine/schema/report.js'
import { readInputDocument } from '../../io/read-input-file.js'
import { Cassette } from './cassette.js'
import { summarizeCassette, type CassetteSummary } from './summarize-cassette.js'

const SNIFF_BYTES = 64 * 1024
/** Bytes a report document may have. */
const MAX_REPORT_BYTES = 256 * 1024 * 1024

/** Whether the file's first line is a cassette header. */
export async function looksLikeCassette(file: string): Promise<boolean> {
  let handle: fs.FileHandle
  try {
    handle = await fs.open(file, 'r')
  } catch {
    return false
  }
  try {
    const buffer = Buffer.alloc(SNIFF_BYTES)
    const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0)
    const text = buffer.subarray(0, bytesRead).toString('utf8')
    const newline = text.indexOf('\n')
    if (newline <= 0) return false
    const first = JSON.parse(text.slice(0, newline)) as { kind?: unknown }
    return first !== null && typeof first === 'object' && first.kind === CASSETTE_KIND
  } catch {
    return false
  } finally {
    await handle.close()
  }
}

export async function readReportsOrCassette(file: string): Promise<{ reports: Report[]; cassette: CassetteSummary | null; omitted: OmittedRuns | null; replay: ReturnType<typeof replayVerdictOf>; demo: Array<DemoRunFacts | null> }> {
  if (await looksLikeCassette(file)) {
    const cassette = await Cassette.load(file)
    return { reports: cassette.toReports(), cassette: summarizeCassette(cassette), omitted: null, replay: null, demo: [] }
  }
  // A report set of every run of a long proxy session can be large: 256 MiB, not the 64 MiB of a rules file.
  const document = await readInputDocument(file, { maxBytes: MAX_REPORT_BYTES })
  return { reports: reportsFromDocument(document, file), cassette: null, omitted: omittedRuns(document), replay: replayVerdictOf(document), demo: demoRunsOf(document, file) }
}
