/**
 * The Python that runs real Python clients in tests: the venv `.ci/python-venv.sh` makes under
 * `node_modules/.cache/toolstorm-py` (pytest, requests, httpx, openai, anthropic, mcp), or
 * `TOOLSTORM_PYTHON`. In CI (`CI` set) a missing venv fails the tests that need it rather than
 * skipping them; on a developer's machine they skip, and `bash .ci/python-venv.sh` installs it.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from './cli.js'

export const PYTHON = process.env.TOOLSTORM_PYTHON ?? path.join(ROOT, 'node_modules/.cache/toolstorm-py/bin/python')

const importable = new Map<string, boolean>()

/** Whether every module named imports in the test Python (answered once per set of names). */
export function hasPythonModules(...modules: string[]): boolean {
  const key = modules.join(',')
  let known = importable.get(key)
  if (known === undefined) {
    known = existsSync(PYTHON) && tryImport(modules)
    importable.set(key, known)
  }
  // In CI the venv is installed by .ci/run: a missing one is a failure, not a skip.
  return known || Boolean(process.env.CI)
}

function tryImport(modules: string[]): boolean {
  try {
    execFileSync(PYTHON, ['-c', modules.map((name) => `import ${name}`).join('; ')], { stdio: 'ignore', timeout: 20_000 })
    return true
  } catch {
    return false
  }
}

/** The MCP client of the Python SDK the record/replay tests drive (`client.py progress|oauth URL`). */
export const PYTHON_MCP_CLIENT = path.join(ROOT, 'fixtures/python-mcp-client/client.py')

/** The last JSON line a command printed (toolstorm's own lines come around it). */
export function printedJson<T>(stdout: string): T {
  const line = stdout.split('\n').reverse().find((candidate) => candidate.startsWith('{'))
  if (line === undefined) throw new Error(`the command printed no JSON line:\n${stdout}`)
  return JSON.parse(line) as T
}
