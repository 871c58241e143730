/**
 * The cassette's shape: one folder per concept, each importing only the folders below it.
 *
 *   format/  the file: schema, validation, how bodies, headers and streams are stored, match keys
 *   record/  the recorder: capture, writer, append-only file (format/)
 *   har/     HAR import and export (format/)
 *   replay/  the cassette source and in-process replay (format/, and record/ for
 *            `--mode update`, which records while it replays)
 * and `index.ts`, the public entry point, over all of them.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { fileCycles, importsOf, sources } from './import-graph.js'

const CASSETTE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cassette')

/** The folders each folder may import besides itself. */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  format: [],
  record: ['format'],
  har: ['format'],
  replay: ['format', 'record'],
}

const folderOf = (file: string) => {
  const parts = path.relative(CASSETTE, file).split(path.sep)
  return parts.length > 1 ? parts[0]! : parts[0]!.replace(/\.ts$/, '')
}

/** The imports between cassette folders that the table does not allow, as `from -> to`. */
export function forbiddenImports(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = []
  for (const [from, targets] of graph) {
    const own = folderOf(from)
    const allowed = ALLOWED[own]
    if (!allowed) continue
    for (const to of targets) {
      const theirs = folderOf(to)
      if (theirs !== own && !allowed.includes(theirs)) found.push(`${path.relative(CASSETTE, from)} -> ${path.relative(CASSETTE, to)}`)
    }
  }
  return found
}

const cassetteGraph = () => new Map(sources(CASSETTE).map((file) => [file, importsOf(file).filter((to) => to.startsWith(CASSETTE + path.sep))]))

describe('the cassette folder', () => {
  it('keeps every file in a concept folder, with only the entry point beside them', () => {
    const placed = sources(CASSETTE).filter((file) => !(folderOf(file) in ALLOWED)).map((file) => path.relative(CASSETTE, file))
    expect(placed).toEqual(['index.ts'])
  })

  it('imports only downward between its folders (format <- record, har <- replay)', () => {
    expect(forbiddenImports(cassetteGraph())).toEqual([])
  })

  it('has no file cycle', () => {
    expect(fileCycles(cassetteGraph(), CASSETTE)).toEqual([])
  })

  it('is checked: an import from the format to the recorder is found', () => {
    const file = (relative: string) => path.join(CASSETTE, relative)
    const graph = new Map([
      [file('format/cassette.ts'), [file('record/cassette-writer.ts'), file('format/cassette-schema.ts')]],
      [file('har/har-export.ts'), [file('replay/replay-session.ts')]],
      [file('replay/replay-source.ts'), [file('record/cassette-recorder.ts')]],
    ])
    expect(forbiddenImports(graph)).toEqual(['format/cassette.ts -> record/cassette-writer.ts', 'har/har-export.ts -> replay/replay-session.ts'])
  })
})
