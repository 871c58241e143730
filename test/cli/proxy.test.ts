import { spawn } from 'node:child_process'
import { readFile, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { BIN, runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'

function startCli(args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => (stdout += c))
  child.stderr.on('data', (c: Buffer) => (stderr += c))
  const firstLines = new Promise<string[]>((resolve, reject) => {
    child.stdout.on('data', () => {
      const lines = stdout.split('\n')
      if (lines.length > 2) resolve(lines.slice(0, 2))
    })
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)))
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, firstLines, exited, output: () => ({ stdout, stderr }) }
}

describe('toolstorm proxy', () => {
  it('prints where it listens first, and writes the report atomically on SIGTERM', async ({ dir, upstream }) => {
    const rules = path.join(dir, 'rules.json')
    const report = path.join(dir, 'out', 'report.json')
    await writeFile(rules, JSON.stringify({ seed: 7, rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 1 }] }))
    const proc = startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--rules', rules, '--report', report, '--print-admin-token'])
    const [first, second] = await proc.firstLines
    const match = /^toolstorm proxy (http:\/\/127\.0\.0\.1:\d+) \(reverse → (\S+)\) · admin (http:\/\/127\.0\.0\.1:\d+)$/.exec(first!)
    expect(match?.[2]).toBe(`${upstream.url}/`)
    const token = /^admin token: (\S+) /.exec(second!)?.[1]
    expect(token).toBeTruthy()
    expect((await fetch(`${match![1]}/items/a`)).status).toBe(429)
    expect((await fetch(`${match![1]}/items/a`)).status).toBe(200)
    const live = await fetch(`${match![3]}/report`, { headers: { authorization: `Bearer ${token}` } })
    expect(((await live.json()) as { calls: unknown[] }).calls).toHaveLength(2)
    proc.child.kill('SIGTERM')
    expect(await proc.exited).toBe(0)
    const saved = JSON.parse(await readFile(report, 'utf8'))
    expect(saved).toMatchObject({ version: 1, kind: 'toolstorm.report', seed: 7, coverage: { busy: { eligible: 1, selected: 1, triggered: 1 } } })
    expect(((await stat(report)).mode & 0o777).toString(8)).toBe('600')
    expect(proc.output().stdout).not.toContain('Bearer ey')
    const check = await runCli(['check', report])
    expect(check.code).toBe(0)
  })

  it('exits 2 on a bad rules file, naming the file and the field', async ({ dir, upstream }) => {
    const rules = path.join(dir, 'bad.yaml')
    await writeFile(rules, 'rules:\n  - name: x\n    route: "GET /a"\n    kind: rate_limit\n    delay: -1\n')
    const result = await runCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--rules', rules])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`Failed to load rules from ${rules}: $.rules[0].delay: expected a finite nonnegative number of seconds`)
  })

  it('exits 2 on a malformed --target', async () => {
    const result = await runCli(['proxy', '--target', 'not a url', '--port', '0', '--admin-port', '0'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('Failed to use --target not a url: "not a url" is not a URL.')
  })

  it('warns when told to listen beyond loopback', async ({ upstream }) => {
    const proc = startCli(['proxy', '--target', upstream.url, '--host', '0.0.0.0', '--port', '0', '--admin-port', '0'])
    await proc.firstLines
    proc.child.kill('SIGINT')
    expect(await proc.exited).toBe(0)
    expect(proc.output().stderr).toContain('listening on 0.0.0.0: anyone who can reach it can use this proxy')
  })

  it('refuses an --admin-token whose value the parser took for a flag, instead of using a random token', async ({ upstream }) => {
    const result = await runCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--admin-token', '-Abcdefghijklmnopqrstuv'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('Failed to read --admin-token: it has no value. Give the token as --admin-token=<token>')
  })

  it('uses a token that starts with "-" given as --admin-token=<token>', async ({ upstream }) => {
    const token = '-Abcdefghijklmnopqrstuv'
    const proc = startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', `--admin-token=${token}`])
    const [first] = await proc.firstLines
    const admin = / · admin (\S+)$/.exec(first!)?.[1]
    expect((await fetch(`${admin}/report`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)
    proc.child.kill('SIGINT')
    expect(await proc.exited).toBe(0)
  })
})
