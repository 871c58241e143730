/**
 * An exchange is finished in one place per path (#39): `drive` and the stream relay return how the
 * exchange ended, and `runFlow` finishes it from that ending; the fast path, which has no flow,
 * finishes from its own hooks; a call refused before it began (begin-in-ledger.ts) is finished
 * where it is refused. A `finish(` anywhere else is a second place to keep in step.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { sources } from './import-graph.js'

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src')

/** Where an exchange's `finish(…)` is called, as `file: function` (the nearest enclosing function declaration or hook), one entry a call. */
export function finishSites(files: readonly string[]): string[] {
  const sites: string[] = []
  for (const file of files) {
    let within = '(top level)'
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      const declared = /^(?:export )?(?:async )?function (\w+)/.exec(line) ?? /^ {4}(\w+)\(.*\) \{$/.exec(line)
      if (declared) within = declared[1]!
      // An exchange's finish takes how it ended; other finishes (a parser's, a transform's, incidents') are not it.
      if (/\.finish\([^)]/.test(line) && !/incidents\?\.finish/.test(line)) sites.push(`${path.relative(SRC, file)}: ${within}`)
    }
  }
  return sites
}

describe('finishing an exchange', () => {
  it('happens in runFlow for every flow exchange, in the fast path hooks, and where a call is refused before it begins', () => {
    const files = sources(SRC).filter((file) => !file.endsWith('.test.ts'))
    expect(finishSites(files).sort()).toEqual([
      'engine/exchange-flow.ts: done',
      'engine/exchange-flow.ts: done',
      'engine/exchange-flow.ts: failedBeforeHead',
      'engine/exchange-flow.ts: runFlow',
      'proxy/begin-in-ledger.ts: beginInLedger',
    ])
  })
})
