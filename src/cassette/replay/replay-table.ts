/** The replay's table of expected vs seen, as `toolstorm replay` prints it and typed errors carry it in `details`. */
import { formatMissDiff, type MissDiff } from './miss-diff.js'

const TABLE_ROWS = 40

/** One row of the table of expected vs seen. */
export interface ReplayRow {
  /** The request's number in arrival order (null for an unused exchange). */
  readonly request: number | null
  /** The recorded exchange's position (null for an extra request). */
  readonly position: number | null
  readonly expected: string | null
  readonly seen: string | null
  readonly result: string
  /** A miss: the closest recorded exchange and what differs from it. */
  readonly diff?: MissDiff
}

/**
 * The table of expected vs seen, failures first in context. At most `limit` rows; the rest are counted.
 * @example
 * formatReplayTable(session.verdict().rows)
 * //  req  #  expected                         seen              result
 * //    1  1  GET /items/:id · GET /items/a    GET /items/a      ok
 */
export function formatReplayTable(rows: readonly ReplayRow[], limit = TABLE_ROWS): string {
  const failing = rows.map((row, index) => (row.result.startsWith('ok') || row.result.startsWith('passed') ? -1 : index)).filter((index) => index >= 0)
  // Show every failure with one row of context before it, then fill up with the first rows.
  const shown = new Set<number>()
  for (const index of failing) {
    if (shown.size >= limit) break
    if (index > 0) shown.add(index - 1)
    shown.add(index)
  }
  for (let index = 0; index < rows.length && shown.size < limit; index++) shown.add(index)
  const picked = [...shown].sort((a, b) => a - b)
  const cells = picked.map((index) => {
    const row = rows[index] as ReplayRow
    return [row.request === null ? '-' : String(row.request), row.position === null ? '-' : String(row.position), clip(row.expected ?? '—'), clip(row.seen ?? '—'), row.result]
  })
  const header = ['req', '#', 'expected', 'seen', 'result']
  const widths = header.map((title, column) => Math.max(title.length, ...cells.map((cell) => (cell[column] as string).length)))
  const line = (cell: string[]) => cell.map((text, column) => (column < 2 ? text.padStart(widths[column] as number) : text.padEnd(widths[column] as number))).join('  ').trimEnd()
  const out = [line(header)]
  // A miss's diff follows its row, indented under `expected`.
  const indent = ' '.repeat((widths[0] as number) + (widths[1] as number) + 4)
  picked.forEach((index, at) => {
    out.push(line(cells[at] as string[]))
    const diff = (rows[index] as ReplayRow).diff
    if (diff) for (const text of formatMissDiff(diff)) out.push(indent + text)
  })
  if (rows.length > picked.length) out.push(`… ${rows.length - picked.length} more row(s)`)
  return out.join('\n')
}

function clip(text: string, width = 60): string {
  return text.length <= width ? text : text.slice(0, width - 1) + '…'
}
