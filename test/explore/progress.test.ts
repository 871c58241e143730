/**
 * What `toolstorm explore` shows while it runs: on a terminal one live line (done/total, failures
 * so far, time left) redrawn in place, each failure printed above it as it is found, the line
 * cleared before the matrix; elsewhere a plain line per finished variation. The terminal is a
 * real pseudo-terminal: util-linux's `script` runs the CLI on one (its stdout, stderr and stdin).
 */
import { execFileSync, spawn } from 'node:child_process'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { BIN, ROOT, runCli } from '../helpers/cli.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { shellWord } from '../../src/explore/counterexamples.js'
import type { ExploreResult } from '../../src/explore/explore-result.js'

const AGENT = [PYTHON, path.join(ROOT, 'fixtures/explore/agent.py')]
// Two variations of the shipment: a timeout it survives, a lost response it ships twice under.
const ARGS = ['--faults', 'timeout,response_lost', '--route', 'POST /shipments']

function hasScript(): boolean {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return Boolean(process.env.CI)
  }
}

/** `command` run on a pseudo-terminal (`script -qec`); what the terminal received. */
function onTerminal(command: readonly string[]): Promise<{ code: number | null; screen: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command.map(shellWord).join(' '), '/dev/null'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, TERM: 'xterm' } })
    let screen = ''
    child.stdout.on('data', (chunk: Buffer) => (screen += chunk.toString('utf8')))
    child.stderr.on('data', (chunk: Buffer) => (screen += chunk.toString('utf8')))
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      resolve({ code, screen })
    })
  })
}

describe.skipIf(!hasPythonModules('json') || !hasScript())('explore: progress while it runs', { timeout: 120_000 }, () => {
  it('on a terminal redraws one live line, prints each failure above it, and clears it before the matrix; elsewhere prints a plain line per variation', async () => {
    const terminal = await onTerminal([process.execPath, BIN, 'explore', ...ARGS, '--', ...AGENT])
    expect(terminal.code, terminal.screen).toBe(1)
    // "Erase line" (ESC [ K) shown as <EL>.
    const screen = terminal.screen.replaceAll('\x1b[K', '<EL>')
    // The live line, redrawn in place (carriage return, erase line): done/total, failures so far, time left.
    expect(screen).toMatch(/\r<EL>explore 1\/2 · [01] failing · ~\d+ s left/)
    expect(screen).toMatch(/\r<EL>explore 2\/2 · 1 failing · ~0 s left/)
    // The failure, on a line of its own above the live line, as it is found.
    expect(screen).toMatch(/\r<EL>\[[12]\/2\] FAIL No duplicate side effects {2}response_lost on POST \/shipments #1 {2}\([0-9a-f]{8}\)\r?\nexplore [12]\/2/)
    // A pass is not printed as a line of its own on a terminal: the live line counts it.
    expect(screen).not.toMatch(/\[[12]\/2\] PASS/)
    // The line is cleared before the matrix.
    expect(screen).toMatch(/\r<EL>(?:\r\n)?toolstorm explore · /)
    // Not a terminal (a pipe): a plain line per finished variation, nothing redrawn; `--json -` puts the result alone on stdout.
    const piped = await runCli(['explore', '--json', '-', ...ARGS, '--', ...AGENT], { timeoutMs: 90_000 })
    expect(piped.code, piped.stderr).toBe(1)
    expect((JSON.parse(piped.stdout) as ExploreResult).summary).toMatchObject({ variations: 2, failed: 1 })
    expect(piped.stderr).not.toContain('\x1b[K')
    const lines = piped.stderr.split('\n').filter((line) => /^\[\d\/2\] /.test(line)).map((line) => line.replace(/ +\([0-9a-f]{8}\)$/, ''))
    expect(lines).toHaveLength(2)
    expect(lines).toEqual(expect.arrayContaining([
      expect.stringMatching(/^\[[12]\/2\] FAIL No duplicate side effects {2}response_lost on POST \/shipments #1$/),
      expect.stringMatching(/^\[[12]\/2\] PASS {2}timeout on POST \/shipments #1$/),
    ]))
  })
})
