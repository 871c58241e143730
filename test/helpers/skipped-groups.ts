/**
 * Groups of tests that need something of the machine (Chromium, redis-server, the Python test venv)
 * are skipped where it is missing, except in CI, where they run and fail. A skip is never silent
 * (#36): `runsHere()` notes it in the file the reporter below names in `TOOLSTORM_SKIPPED_GROUPS`,
 * and the reporter ends the run with one line saying which groups were skipped and what was
 * missing. Nothing is printed when every group could run. The reporter is in vitest.config.ts
 * beside the default one; a `--reporter` given on the command line replaces both.
 */
import { appendFileSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Reporter } from 'vitest/node'

const ENV = 'TOOLSTORM_SKIPPED_GROUPS'

/** Whether `group` runs here: `available`, or CI (where a missing requirement must fail, not skip). Else the skip is noted with what is `missing`. */
export function runsHere(group: string, available: boolean, missing: string): boolean {
  if (available || process.env.CI) return true
  const file = process.env[ENV]
  if (file) appendFileSync(file, JSON.stringify({ group, missing }) + '\n')
  return false
}

/** The line the run ends with, or null when no group was skipped. */
export function skippedGroupsLine(notes: string): string | null {
  const groups = new Map<string, string>()
  for (const line of notes.split('\n')) {
    if (!line) continue
    const { group, missing } = JSON.parse(line) as { group: string; missing: string }
    groups.set(group, missing)
  }
  if (groups.size === 0) return null
  return `[toolstorm tests] skipped: ${[...groups].sort(([a], [b]) => a.localeCompare(b)).map(([group, missing]) => `${group} (${missing})`).join('; ')}. Install what is missing, or set CI=1 to make them fail instead.`
}

export default class SkippedGroupsReporter implements Reporter {
  readonly #file = path.join(os.tmpdir(), `toolstorm-skipped-groups-${process.pid}.jsonl`)

  // Before the workers start: they inherit the variable.
  onInit(): void {
    rmSync(this.#file, { force: true })
    process.env[ENV] = this.#file
  }

  onTestRunEnd(): void {
    let notes: string
    try {
      notes = readFileSync(this.#file, 'utf8')
    } catch {
      return // nothing was skipped
    }
    rmSync(this.#file, { force: true })
    const line = skippedGroupsLine(notes)
    if (line) process.stdout.write(`\n${line}\n`)
  }
}
