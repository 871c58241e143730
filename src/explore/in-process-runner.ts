/**
 * Variations of a function (`explore({ run: async (ctx) => … })`): each variation is one call of
 * it with a storm of its own (the variation's rules), through `intercept()`, in an async task of
 * its own, so `jobs` calls run at once without one taking another's faults (interception scopes,
 * src/interceptors/interception-scopes.ts). A function that throws failed (as a command that
 * exits 1); one still running at the run timeout is a hang (its signal is aborted; it is no longer
 * waited for). The storm's report and a recorder's cassette are the run's evidence.
 */
import { createCassetteRecorder, type CassetteRecorder } from '../cassette/record/cassette-recorder.js'
import type { CassetteExchange } from '../cassette/format/cassette-schema.js'
import { Cassette } from '../cassette/format/cassette.js'
import { createStorm } from '../create-storm.js'
import type { Clock } from '../engine/clock.js'
import type { StormConfigInput } from '../engine/schema/config.js'
import type { Storm } from '../engine/storm.js'
import { interceptFor, type InterceptOptions } from '../interceptors/intercept.js'
import type { RunOutcome, RunRequest, VariationRunner } from './runner.js'

/** What the explored function is given. */
export interface ExploreRunContext {
  /** The run's id (`explore-<variation id>`, `explore-baseline`). */
  readonly run: string
  /** The run's storm: its clock, `storm.effect()` for a tool in this process, its report. */
  readonly storm: Storm
  /** Aborted when the run timeout passes or explore is stopped. */
  readonly signal: AbortSignal
}

export interface InProcessOptions {
  readonly run: (context: ExploreRunContext) => unknown
  readonly base: StormConfigInput
  /** `intercept()`'s options for every run (`targets`, …); explore adds its recorder as observer. */
  readonly intercept?: Omit<InterceptOptions, 'observer' | 'source'>
  /** A clock per run (a `VirtualClock` for a lab); default the real one. */
  readonly clock?: () => Clock
}

interface Kept {
  readonly recorder: CassetteRecorder
}

export async function startInProcessRunner(options: InProcessOptions): Promise<VariationRunner> {
  // The plug-ins are each run's storm's, the rest the interception's.
  const { plugins, modelCalls, ...interceptOptions } = options.intercept ?? {}
  const kept = new Map<string, Kept>()
  const running = new Set<AbortController>()

  const recorded = async (run: string): Promise<Cassette | null> => {
    const entry = kept.get(run)
    if (!entry) return null
    const cassette = await entry.recorder.cassette()
    // One storm per run: its exchanges are the storm's default run, named here by the variation's.
    return Cassette.from(cassette.header, cassette.exchanges.map((exchange) => ({ ...exchange, run })), `the recording of run ${run}`)
  }

  return {
    label: 'the explored function',
    howToConnect: ['make its requests with fetch or node:http in this process, inside the function (intercept() sees those); an SDK with its own transport must use them too'],
    async run(request: RunRequest): Promise<RunOutcome> {
      // A task of its own before intercepting: the interception's scope must not reach the caller's.
      await Promise.resolve()
      const storm = createStorm({ ...options.base, seed: request.rules.seed, routes: { ...request.rules.routes }, ...(request.rules.maxCalls ? { maxCalls: request.rules.maxCalls } : {}), rules: [...request.rules.rules] }, { ...(options.clock ? { clock: options.clock() } : {}), plugins, modelCalls })
      const recorder = createCassetteRecorder(storm, { source: 'in-process' })
      kept.set(request.run, { recorder })
      const controller = new AbortController()
      running.add(controller)
      // Each run owns its interception, as the vitest fixture's tests do: concurrent runs are separate branches, never nested (interception-scopes.ts).
      const interception = interceptFor({ run: request.run }, storm, { ...interceptOptions, observer: recorder.observer })
      const started = performance.now()
      let exit: RunOutcome['exit'] = { code: 0, signal: null, timedOut: false }
      let output = ''
      let timer: NodeJS.Timeout | undefined
      try {
        const timedOut = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), request.timeoutMs)
          controller.signal.addEventListener('abort', () => resolve('timeout'))
        })
        const ended = await Promise.race([Promise.resolve().then(() => options.run({ run: request.run, storm, signal: controller.signal })).then(() => 'done' as const), timedOut])
        if (ended === 'timeout') {
          exit = { code: null, signal: 'SIGKILL', timedOut: true }
          controller.abort()
        }
      } catch (error) {
        exit = { code: 1, signal: null, timedOut: false }
        output = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error)
      } finally {
        clearTimeout(timer)
        running.delete(controller)
        interception.dispose()
      }
      return { run: request.run, exit, output, report: { ...storm.report(), run: request.run }, seconds: (performance.now() - started) / 1000 }
    },
    async exchanges(run: string): Promise<CassetteExchange[]> {
      return [...((await recorded(run))?.exchanges ?? [])]
    },
    async cassette(run: string): Promise<string> {
      return (await recorded(run))?.toString() ?? ''
    },
    async forget(run: string): Promise<void> {
      const entry = kept.get(run)
      kept.delete(run)
      await entry?.recorder.close()
    },
    abort(): void {
      for (const controller of running) controller.abort()
    },
    async close(): Promise<void> {
      for (const controller of running) controller.abort()
      for (const entry of kept.values()) await entry.recorder.close()
      kept.clear()
    },
  }
}
