/**
 * How explore runs one variation, whatever runs it: a command next to a proxy
 * (command-runner.ts) or a function in this process through `intercept()` (in-process-runner.ts).
 * A run is named by its run id and decided by its own rules; its evidence is its report and its
 * recorded exchanges (redacted, as in every cassette).
 */
import type { CassetteExchange } from '../cassette/format/cassette-schema.js'
import type { Report } from '../engine/schema/report.js'
import type { RuleInput } from '../engine/schema/rule.js'
import type { CommandExit } from './verdict.js'

/** A run's own rules file (`PUT /rules?run=`): the seed, the base routes, one rule per fault. */
export interface RunRules {
  readonly version: 1
  readonly seed: number
  readonly routes: Readonly<Record<string, string>>
  readonly maxCalls?: number
  readonly rules: readonly RuleInput[]
}

export interface RunRequest {
  readonly run: string
  readonly rules: RunRules
  readonly timeoutMs: number
}

export interface RunOutcome {
  readonly run: string
  readonly exit: CommandExit
  /** The last lines the command printed (stdout and stderr, interleaved). */
  readonly output: string
  readonly report: Report
  /** Wall time of the command (or function), seconds. */
  readonly seconds: number
}

export interface VariationRunner {
  /** What the command (or function) is, for messages. */
  readonly label: string
  /** How a command reaches the proxy, for the message when it sent nothing through it. */
  readonly howToConnect: readonly string[]
  run(request: RunRequest): Promise<RunOutcome>
  /** The run's recorded exchanges (redacted). */
  exchanges(run: string): Promise<CassetteExchange[]>
  /** The run's cassette as a file holds it (JSON Lines, redacted): a counterexample's offline fixture. */
  cassette(run: string): Promise<string>
  /** Forget the run (its calls, effects and own rules): explore keeps what it needs. */
  forget(run: string): Promise<void>
  /** Stop every run still going (a stop request): they end as killed. */
  abort(): void
  close(): Promise<void>
}
