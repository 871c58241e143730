/**
 * `src/proxy` and `src/cassette` import each other one way only: the proxy records cassettes
 * (`startProxy({ record })`, the flight recorder) and serves them (the replay server is the proxy
 * with a cassette source, `proxy/replay/`); the cassette (its format, recorder, sources and
 * in-process replay) knows nothing of the proxy. The cassette's public entry point (`index.ts`,
 * `toolstorm/cassette`) re-exports the replay server: it is the package's surface, and no source
 * file imports it, so it closes no loop.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { importsOf, sources } from './import-graph.js'

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src')
const PROXY = path.join(SRC, 'proxy')
const CASSETTE = path.join(SRC, 'cassette')
const ENTRY = path.join(CASSETTE, 'index.ts')
const within = (dir: string, file: string) => file.startsWith(dir + path.sep)

/** The imports from a cassette file (not its entry point) into the proxy, as `from -> to` relative to src. */
export function cassetteIntoProxy(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = []
  for (const [from, targets] of graph) {
    if (!within(CASSETTE, from) || from === ENTRY) continue
    for (const to of targets) if (within(PROXY, to)) found.push(`${path.relative(SRC, from)} -> ${path.relative(SRC, to)}`)
  }
  return found
}

const srcGraph = () => new Map(sources(SRC).map((file) => [file, importsOf(file)]))

describe('src/proxy and src/cassette', () => {
  it('import each other one way: no cassette file imports the proxy', () => {
    expect(cassetteIntoProxy(srcGraph())).toEqual([])
  })

  it('leave the cassette entry point to the package surface: no source file imports it', () => {
    const importers = [...srcGraph()].filter(([, targets]) => targets.includes(ENTRY)).map(([from]) => path.relative(SRC, from))
    expect(importers).toEqual([])
  })

  it('is checked: a cassette file importing the proxy is found, the entry point and the proxy importing the cassette are not', () => {
    const file = (relative: string) => path.join(SRC, relative)
    const graph = new Map([
      [file('cassette/replay/replay-server.ts'), [file('proxy/proxy-server.ts'), file('cassette/replay/replay-source.ts')]],
      [file('cassette/index.ts'), [file('proxy/replay/replay-server.ts')]],
      [file('proxy/proxy-recording.ts'), [file('cassette/record/cassette-recorder.ts')]],
    ])
    expect(cassetteIntoProxy(graph)).toEqual(['cassette/replay/replay-server.ts -> proxy/proxy-server.ts'])
  })
})
