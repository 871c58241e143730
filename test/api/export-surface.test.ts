/**
 * The public surface, entry point by entry point: every name each one exports (values and types),
 * read by the TypeScript checker from the sources package.json "exports" maps. A name added or
 * dropped fails here, so an internal cannot leak by accident and a removal is a decision (with a
 * CHANGELOG.md line). Grouped by audience (docs/api.md): test authors at the root, transports in
 * their subpaths, format tooling in `toolstorm/cassette`, extension points in `toolstorm/extend`.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import * as root from '../../src/index.js'
import { ROOT } from '../helpers/cli.js'

const packageJson = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, string | { types: string }> }

/** Entry point → its source file (dist/x/index.d.ts → src/x/index.ts). */
const ENTRIES = Object.fromEntries(
  Object.entries(packageJson.exports)
    .filter(([, target]) => typeof target !== 'string')
    .map(([entry, target]) => [path.posix.join('toolstorm', entry), path.join(ROOT, (target as { types: string }).types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts'))]),
)

/** Every name each entry exports, sorted. */
function surface(): Record<string, string[]> {
  const program = ts.createProgram(Object.values(ENTRIES), { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true, skipLibCheck: true, noEmit: true, types: ['node'] })
  const checker = program.getTypeChecker()
  const names: Record<string, string[]> = {}
  for (const [entry, file] of Object.entries(ENTRIES)) {
    const symbol = checker.getSymbolAtLocation(program.getSourceFile(file)!)!
    names[entry] = checker.getExportsOfModule(symbol).map((s) => s.name).sort()
  }
  return names
}

/** Deprecated root re-exports (CHANGELOG.md, Unreleased): still working, listed apart so they are not mistaken for the surface. */
const DEPRECATED_AT_ROOT = ['BeginRequest', 'EffectEvent', 'ExchangeEvent', 'FAULT_KINDS', 'Fault', 'FaultAction', 'FaultContext', 'FaultOutcome', 'FaultPhase', 'ForwardOptions', 'ResponseWriter', 'RunEvent', 'SourceAction', 'SourceRequest', 'StreamNext', 'StreamPiece', 'StreamStep', 'StreamTransform', 'UpstreamExchange', 'UpstreamResponse', 'UpstreamSource', 'UpstreamTarget', 'channels', 'faultFor']

const EXPECTED: Record<string, string[]> = JSON.parse(readFileSync(path.join(ROOT, 'test/api/export-surface.json'), 'utf8'))

describe('the public surface', () => {
  const actual = surface()

  it('exports from each entry point exactly the names listed for it', () => {
    expect(Object.keys(actual).sort()).toEqual(Object.keys(EXPECTED).sort())
    for (const entry of Object.keys(EXPECTED)) expect(actual[entry], entry).toEqual(EXPECTED[entry])
  })

  it('keeps every deprecated root name working, each also exported by toolstorm/extend', () => {
    for (const name of DEPRECATED_AT_ROOT) {
      expect(actual['toolstorm'], name).toContain(name)
      if (name !== 'BeginRequest') expect(actual['toolstorm/extend'], name).toContain(name)
    }
  })

  it('exports from the root every error class a public API throws', () => {
    // Every class in src that extends an error class; the few left out never reach a caller.
    const internal = new Set(['NoAnswerError', 'StrictJsonError', 'ToolCallError', 'ServerExitedError' /* the stdio wrapper's, answered as a JSON-RPC error */])
    const sources = ts.sys.readDirectory(path.join(ROOT, 'src'), ['.ts']).filter((file) => !file.endsWith('.test.ts'))
    const classes = sources.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/^export class (\w+) extends \w*Error\b|^class (\w+) extends \w*Error\b/gm)].map((m) => (m[1] ?? m[2])!))
    expect(classes.length).toBeGreaterThan(15)
    const missing = classes.filter((name) => !internal.has(name) && !(name in root))
    expect(missing).toEqual([])
    expect(new root.StateUnavailableError('down')).toBeInstanceOf(root.ToolstormError)
  })
})
