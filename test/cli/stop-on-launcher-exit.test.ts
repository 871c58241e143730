/**
 * Whatever started toolstorm can stop it, and nothing it started outlives it (issue #22, item 3):
 * SIGINT and SIGTERM sent to `npx toolstorm …` (the real npm, with this package installed in a
 * project) stop toolstorm with its report and cassette written, and so does the exit of the
 * process that started it. npm runs the bin through `sh -c` and forwards signals to that shell
 * only, which dies of SIGTERM and holds SIGINT (src/cli/stop-request.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { validateReport } from '../../src/report/validate-report.js'
import { BIN, ROOT } from '../helpers/cli.js'
import { closingChild } from '../helpers/teardown.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'

let dir: string
let project: string
let upstream: Upstream

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-launcher-'))
  upstream = await startUpstream()
  // A user's project with this package installed (a link to the checkout, no registry needed).
  project = path.join(dir, 'project')
  await runToEnd('mkdir', ['-p', project])
  await writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'launcher-test', private: true }))
  await runToEnd('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', ROOT], project)
}, 120_000)
afterAll(async () => {
  await upstream?.close()
  await rm(dir, { recursive: true, force: true })
})

function runToEnd(file: string, args: string[], cwd?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${file} ${args.join(' ')} exited ${code}: ${stderr}`))))
  })
}

/** Pids of toolstorm processes whose command line names a file under `folder` (this test's). */
function toolstormPids(folder: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')
      if (argv.some((arg) => arg.endsWith('toolstorm.js') || arg.endsWith('.bin/toolstorm')) && argv.some((arg) => arg.startsWith(folder))) pids.push(Number(entry))
    } catch {
      // Gone meanwhile.
    }
  }
  return pids
}

/**
 * Start `file args` and resolve once it printed the data plane's address (the banner goes to stdout).
 * A failed case must not leave its processes behind: when it ends, `file` is killed, then by pid
 * the toolstorm processes it started.
 */
function start(file: string, args: string[], options: { cwd?: string } = {}): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  onTestFinished(() => {
    for (const pid of toolstormPids(dir)) process.kill(pid, 'SIGKILL')
  })
  const child = closingChild(spawn(file, args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] }))
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const url = /^toolstorm proxy (http:\/\/\S+) /m.exec(stdout)?.[1]
      if (url) resolve({ child, url, stderr: () => stderr })
    })
    child.once('exit', (code) => reject(new Error(`${file} exited ${code} before listening: ${stderr}`)))
  })
}

/** Resolve with how long it took until no toolstorm process of this case runs and `files` exist. */
async function stoppedWithFiles(marker: string, files: string[], since: number): Promise<number> {
  const deadline = Date.now() + 15_000
  while (toolstormPids(marker).length > 0 || files.some((file) => !existsSync(file))) {
    if (Date.now() > deadline) throw new Error(`toolstorm still running (${toolstormPids(marker).join(', ') || 'no process'}) or files missing: ${files.filter((file) => !existsSync(file)).join(', ')}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return Date.now() - since
}

/** The report and the cassette hold the one call made before the stop. */
async function expectWritten(report: string, cassette: string): Promise<void> {
  expect(validateReport(JSON.parse(await readFile(report, 'utf8'))).calls.map((call) => [call.route, call.status])).toEqual([['GET /items/a', 200]])
  expect((await Cassette.load(cassette)).exchanges.map((exchange) => exchange.request.url)).toEqual(['/items/a'])
}

describe('stopping toolstorm through npx', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)('%s to the npx process stops toolstorm with its report and cassette written', async (signal) => {
    const marker = path.join(dir, `npx-${signal}`)
    const [report, cassette] = [`${marker}-report.json`, `${marker}.jsonl`]
    const npx = await start('npx', ['toolstorm', 'record', cassette, '--target', upstream.url, '--port', '0', '--admin-port', '0', '--report', report], { cwd: project })
    expect((await fetch(`${npx.url}/items/a`)).status).toBe(200)
    expect(toolstormPids(marker)).toHaveLength(1)
    const since = Date.now()
    npx.child.kill(signal)
    const took = await stoppedWithFiles(marker, [report, cassette], since)
    await expectWritten(report, cassette)
    // The measure behind "within 2 s": printed, not asserted (a loaded CI machine is no benchmark).
    console.info(`npx ${signal}: toolstorm stopped with its files written after ${took} ms`)
    await expect(fetch(`${npx.url}/items/b`)).rejects.toThrow()
  })
})

describe('a toolstorm whose parent exits', () => {
  /** A parent that starts toolstorm and would never stop it. */
  const launcher = (args: string[]) => [
    '-e',
    `require('node:child_process').spawn(process.execPath, ${JSON.stringify([BIN, ...args])}, { stdio: 'inherit' }); setInterval(() => {}, 1 << 30)`,
  ]

  it('stops with its report and cassette written when that parent is killed', async () => {
    const marker = path.join(dir, 'orphan')
    const [report, cassette] = [`${marker}-report.json`, `${marker}.jsonl`]
    const parent = await start(process.execPath, launcher(['record', cassette, '--target', upstream.url, '--port', '0', '--admin-port', '0', '--report', report]))
    expect((await fetch(`${parent.url}/items/a`)).status).toBe(200)
    const since = Date.now()
    parent.child.kill('SIGKILL')
    const took = await stoppedWithFiles(marker, [report, cassette], since)
    await expectWritten(report, cassette)
    console.info(`parent killed: toolstorm stopped with its files written after ${took} ms`)
  })

  it('keeps running with --no-exit-with-parent, until it is stopped itself', async () => {
    const marker = path.join(dir, 'kept')
    const report = `${marker}-report.json`
    const parent = await start(process.execPath, launcher(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--report', report, '--no-exit-with-parent']))
    parent.child.kill('SIGKILL')
    // Several times the interval at which the parent is looked at (a negative: it does not stop,
    // so there is no event to wait for).
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect((await fetch(`${parent.url}/items/a`)).status).toBe(200)
    const [pid] = toolstormPids(marker)
    process.kill(pid as number, 'SIGTERM')
    await stoppedWithFiles(marker, [report], Date.now())
    expect(validateReport(JSON.parse(await readFile(report, 'utf8'))).calls).toHaveLength(1)
  })
})
