/**
 * `exploreTests(name, options)`: `explore()` as a vitest suite. The search runs while vitest
 * collects the file (an async `describe`), then each variation is a test case of its own, named
 * by its fault and call site with its id: a failure fails its case with the checks that failed
 * and the command that reruns it; a variation not exercised, not run (a budget) or a known failure
 * (`known`) is a skipped case that says so. Works with `command` and with `run` (in-process).
 *
 * @example
 * import { exploreTests } from 'toolstorm/vitest'
 * exploreTests('the agent survives its faults', { command: ['python', 'agent.py'], jobs: 4 })
 */
import { describe, it } from 'vitest'
import { explore, type ExploreOptions } from '../explore/explore.js'
import type { ExploreVariationResult } from '../explore/explore-result.js'
import { describeOf, formatRecovery } from '../explore/format-matrix.js'

/** The message of a failing variation's case: its checks, its rerun, its counterexample and last lines. */
function failure(variation: ExploreVariationResult, command: string): Error {
  const lines = [
    `${describeOf(variation)} fails:`,
    ...variation.failed.map((check) => `  ${check.check}: ${check.detail}`),
    `rerun: toolstorm explore --only ${variation.id} -- ${command}`,
    ...(variation.counterexample ? [`counterexample: ${variation.counterexample}`] : []),
    ...(variation.output ? ['--- the last lines it printed ---', variation.output] : []),
  ]
  const error = new Error(lines.join('\n'))
  error.name = 'ExploreFailure'
  return error
}

/** Define the suite `name`: one test case per variation of `explore(options)`. */
export function exploreTests(name: string, options: ExploreOptions): void {
  describe(name, async () => {
    const { result } = await explore(options)
    for (const variation of result.variations) {
      const title = `${describeOf(variation)} [${variation.id}]`
      if (variation.status === 'not-exercised') it.skip(`${title}: not exercised (the fault never fired)`, () => undefined)
      else if (variation.status === 'fail' && variation.known) it.skip(`${title}: known failure (${variation.known === 'baseline' ? 'in the baseline' : 'allowed'})`, () => undefined)
      else if (variation.status === 'fail') {
        it(title, () => {
          throw failure(variation, result.command)
        })
      } else it(`${title}${variation.recovery ? ` (${formatRecovery(variation.recovery)})` : ''}`, () => undefined)
    }
    for (const skip of result.skipped) for (const [index, id] of (skip.ids ?? []).entries()) it.skip(`${skip.names?.[index] ?? id} [${id}]: ${skip.detail}`, () => undefined)
  })
}
