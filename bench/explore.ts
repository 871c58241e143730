/**
 * `npm run bench -- explore`: what the search itself costs. An agent that waits on I/O
 * (bench/explore-agent.mjs: three calls of 100 ms each through the proxy) is explored with the
 * default table, --jobs 1 then --jobs 4, through the library (`explore({ command })`, as the CLI).
 *
 * - Overhead per variation at --jobs 1: explore's wall time minus the time the command's runs
 *   took (each measured from spawn to exit), over the runs: setting the run's rules, reading its
 *   report, forgetting it, scheduling, and the proxy's start amortised. Target ≤ 50 ms.
 * - Speed-up of --jobs 4 over --jobs 1 on the same agent (a 2-core machine: the runs wait, they
 *   do not compute). Target ≥ 1.7×.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { explore } from '../src/explore/explore.js'
import type { ExploreResult } from '../src/explore/explore-result.js'
import { median } from './processes.js'

interface Options {
  /** Explores per setting (median reported). */
  rounds: number
}

const AGENT = [process.execPath, path.join(path.dirname(fileURLToPath(import.meta.url)), 'explore-agent.mjs')]

async function once(jobs: number): Promise<{ wall: number; result: ExploreResult }> {
  const began = performance.now()
  const { result } = await explore({ command: AGENT, jobs })
  return { wall: (performance.now() - began) / 1000, result }
}

export async function benchExplore(options: Options): Promise<Record<string, unknown>> {
  await once(4) // warm-up: module loading, the first spawns
  const serial: Array<{ wall: number; overheadMs: number; commandMs: number; runs: number }> = []
  const parallel: number[] = []
  for (let round = 0; round < options.rounds; round++) {
    const one = await once(1)
    const commandSeconds = one.result.baseline.seconds + one.result.variations.reduce((sum, variation) => sum + variation.seconds, 0)
    const runs = one.result.timing.runs
    serial.push({ wall: one.wall, overheadMs: ((one.wall - commandSeconds) / runs) * 1000, commandMs: (commandSeconds / runs) * 1000, runs })
    parallel.push((await once(4)).wall)
  }
  const overheadMs = median(serial.map((sample) => sample.overheadMs))
  const commandMs = median(serial.map((sample) => sample.commandMs))
  const wall1 = median(serial.map((sample) => sample.wall))
  const wall4 = median(parallel)
  const speedup = wall1 / wall4
  const runs = serial[0]?.runs ?? 0
  const table = [
    '| metric | value |',
    '|---|---|',
    `| runs per explore (baseline + variations) | ${runs} |`,
    `| command's own time per run (median) | ${commandMs.toFixed(0)} ms |`,
    `| explore's overhead per run, --jobs 1 | ${overheadMs.toFixed(1)} ms |`,
    `| wall, --jobs 1 | ${wall1.toFixed(2)} s |`,
    `| wall, --jobs 4 | ${wall4.toFixed(2)} s |`,
    `| speed-up, --jobs 4 over --jobs 1 | ${speedup.toFixed(2)}× |`,
  ].join('\n')
  return {
    suite: 'explore',
    rounds: options.rounds,
    runs,
    overheadMs,
    commandMs,
    wall1,
    wall4,
    speedup,
    table,
    gates: {
      "explore's overhead per variation ≤ 50 ms at --jobs 1": overheadMs <= 50,
      '--jobs 4 ≥ 1.7× faster than --jobs 1 (I/O-waiting agent)': speedup >= 1.7,
    },
  }
}
