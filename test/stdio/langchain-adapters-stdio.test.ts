/**
 * A framework's own reconnect path: the LangChain MCP adapters (`@langchain/mcp-adapters` 1.1,
 * `MultiServerMCPClient` with `restart: { enabled: true }`) relaunch a stdio server whose process
 * exited. After `response_lost` on `create_note` #1 the adapters relaunch `toolstorm mcp`, and
 * the agent's logic calls the tool again. With `--state-dir` the relaunch continues the run;
 * without it every launch is a new run, where the retry is call #1 again and lost again, and the
 * report of the last launch knows nothing of the commits.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { MultiServerMCPClient } from '@langchain/mcp-adapters'
import type { Report } from '../../src/engine/schema/report.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { NOTES_SERVER, readJson, rulesFile, wrappedCommand } from '../helpers/stdio-mcp.js'

interface Attempt {
  readonly ok: boolean
  readonly said: string
}

/**
 * The agent's logic: call create_note; when the connection closed under it, call it once more on
 * the tools the adapters list after their relaunch (attempts made while it is still relaunching,
 * "Not connected", are made again).
 */
async function noteWithOneRetry(client: MultiServerMCPClient): Promise<Attempt[]> {
  const attempts: Attempt[] = []
  for (let tries = 0; attempts.length < 2 && tries < 40; tries++) {
    let tool
    try {
      tool = (await client.getTools()).find((candidate) => candidate.name.endsWith('create_note'))!
    } catch (error) {
      // A launch that could not connect: on a loaded machine the adapters' restart and getTools() may
      // each launch one, and with --state-dir the second waits for the first's run, then gives up
      // (ERR_STATE_LOCKED). The agent lists the tools again, as it does while "Not connected".
      if (!/Failed to connect/.test((error as Error).message)) throw error
      await new Promise((resolve) => setTimeout(resolve, 250))
      continue
    }
    try {
      attempts.push({ ok: true, said: JSON.stringify(await tool.invoke({ key: 'order-1' })) })
      break
    } catch (error) {
      const said = (error as Error).message
      if (/Not connected/.test(said)) await new Promise((resolve) => setTimeout(resolve, 250))
      else attempts.push({ ok: false, said })
    }
  }
  return attempts
}

/** The pids of processes whose command line names `text` (Linux /proc). */
function processesNaming(text: string): number[] {
  return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text)
    } catch {
      return false // gone meanwhile
    }
  }).map(Number)
}

async function session(stateDir: boolean): Promise<{ attempts: Attempt[]; notes: string; report: Report }> {
  const folder = await temporaryFolder('toolstorm-langchain-')
  const report = path.join(folder, 'report.json')
  const notes = path.join(folder, 'notes.txt')
  await writeFile(notes, '')
  const rules = await rulesFile(folder, [{ name: 'lost-note', route: 'tools/call create_note', kind: 'response_lost', calls: [1] }])
  const [command, ...args] = wrappedCommand(NOTES_SERVER, ['--rules', rules, '--report', report, ...(stateDir ? ['--state-dir', path.join(folder, 'state')] : [])]) as [string, ...string[]]
  const client = new MultiServerMCPClient({
    mcpServers: { notes: { transport: 'stdio', command, args, env: { ...(process.env as Record<string, string>), NOTES_FILE: notes }, stderr: 'ignore', restart: { enabled: true, maxAttempts: 3, delayMs: 100 } } },
  })
  let attempts: Attempt[]
  try {
    attempts = await noteWithOneRetry(client)
  } finally {
    await client.close()
  }
  // The launch the adapters made last writes its report (and saves the run) when it ends. The
  // adapters' close() does not always end a launch their restart made (one may still be starting):
  // what is left of this folder's launches is stopped as a client stops a server, then awaited. A
  // restart the adapters had already scheduled may still launch one after close(): each launch is
  // stopped once, when it is first seen.
  const stopped = new Set<number>()
  await vi.waitFor(
    () => {
      const left = processesNaming(folder)
      for (const pid of left.filter((pid) => !stopped.has(pid))) {
        stopped.add(pid)
        process.kill(pid, 'SIGTERM')
      }
      expect(left).toEqual([])
    },
    { timeout: 20_000, interval: 50 },
  )
  return { attempts, notes: await readFile(notes, 'utf8'), report: await readJson<Report>(report) }
}

describe('the LangChain MCP adapters relaunching a stdio server through toolstorm mcp', () => {
  it('with --state-dir: the relaunch continues the run, the retry is create_note #2 and succeeds, and the report holds both launches and both commits', async () => {
    const { attempts, notes, report } = await session(true)
    expect(attempts.map((attempt) => attempt.ok)).toEqual([false, true])
    expect(attempts[0]!.said).toMatch(/-32000: Connection closed/)
    expect(notes).toBe('order-1\norder-1\n')
    const notesCalls = report.calls.filter((call) => call.route === 'tools/call create_note')
    expect(notesCalls.map((call) => [call.ordinal, call.fault, call.outcome, call.mcp?.session])).toEqual([
      [1, 'lost-note', 'reset', 'stdio-1'],
      [2, null, 'response', 'stdio-2'],
    ])
    expect(report.effects.map((effect) => [effect.key, effect.call])).toEqual([
      ['order-1', notesCalls[0]!.id],
      ['order-1', notesCalls[1]!.id],
    ])
    expect(report.coverage['lost-note']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
  })

  it('without it: each relaunch is a new run, the retry is create_note #1 again and lost again, and the last launch\'s report holds neither commit', async () => {
    const { attempts, notes, report } = await session(false)
    expect(attempts.map((attempt) => attempt.ok)).toEqual([false, false])
    expect(notes).toBe('order-1\norder-1\n')
    expect(report.calls.filter((call) => call.route === 'tools/call create_note').every((call) => call.ordinal === 1)).toBe(true)
    expect(report.effects.length).toBeLessThan(2)
  })
})
