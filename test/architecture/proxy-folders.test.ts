/**
 * The proxy's two halves of a transport (docs/architecture.md) each have their folder:
 *
 *   upstream/  where a response comes from: the live source, the upstream client, pool, connection
 *   sink/      how the client is answered: the socket sink, its pass-through fast path, replies
 *
 * The sink drives the upstream (the fast path forwards through the pool); the upstream half never
 * imports the sink.
 */
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { importsOf, sources } from './import-graph.js'

const PROXY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/proxy')
const UPSTREAM = path.join(PROXY, 'upstream')
const SINK = path.join(PROXY, 'sink')

/** The imports from the upstream half into the sink, as `from -> to` relative to src/proxy. */
export function upstreamIntoSink(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const found: string[] = []
  for (const [from, targets] of graph) {
    if (!from.startsWith(UPSTREAM + path.sep)) continue
    for (const to of targets) if (to.startsWith(SINK + path.sep)) found.push(`${path.relative(PROXY, from)} -> ${path.relative(PROXY, to)}`)
  }
  return found
}

describe('src/proxy', () => {
  it('keeps the upstream half and the client sink in their folders, none of their files flat beside them', () => {
    const flat = readdirSync(PROXY).filter((name) => /^(upstream-|live-source|socket-sink|pass-through|client-replies|proxy-response-writer|reset-socket)/.test(name))
    expect(flat).toEqual([])
    expect(readdirSync(UPSTREAM)).toEqual(expect.arrayContaining(['live-source.ts', 'upstream-pool.ts']))
    expect(readdirSync(SINK)).toEqual(expect.arrayContaining(['socket-sink.ts', 'pass-through.ts']))
  })

  it('imports the sink from no file of the upstream half', () => {
    expect(upstreamIntoSink(new Map(sources(PROXY).map((file) => [file, importsOf(file)])))).toEqual([])
  })

  it('is checked: an upstream file importing the sink is found, the sink importing the upstream is not', () => {
    const graph = new Map([
      [path.join(UPSTREAM, 'live-source.ts'), [path.join(SINK, 'reset-socket.ts')]],
      [path.join(SINK, 'pass-through.ts'), [path.join(UPSTREAM, 'upstream-client.ts')]],
    ])
    expect(upstreamIntoSink(graph)).toEqual(['upstream/live-source.ts -> sink/reset-socket.ts'])
  })
})
