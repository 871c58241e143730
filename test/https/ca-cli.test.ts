/**
 * `toolstorm ca` and the HTTPS options of `toolstorm proxy`, as a user runs them (the built bin).
 */
import { execFile, spawn } from 'node:child_process'
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BIN, runCli } from '../helpers/cli.js'
import { upstreamTestCa } from '../helpers/https-proxied.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'

const run = promisify(execFile)
let root: string
let upstream: Upstream
let upstreamCaFile: string
beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-ca-cli-'))
  const ca = await upstreamTestCa()
  upstream = await startUpstream({ tls: await ca.issue(['127.0.0.1', 'localhost']) })
  upstreamCaFile = path.join(root, 'upstream-ca.pem')
  await writeFile(upstreamCaFile, ca.certPem)
})
afterAll(async () => {
  await upstream.close()
  await rm(root, { recursive: true, force: true })
})

/** Environment for a child that must not touch the real home folder. */
function isolatedEnv(home: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, ...extra }
  delete env.TOOLSTORM_CA_DIR
  delete env.XDG_CONFIG_HOME
  return { ...env, ...extra }
}

/** Start `toolstorm proxy`; `lines` resolves with its first `count` stdout lines. */
function startProxyCli(args: string[], env: NodeJS.ProcessEnv, count = 4) {
  const child = spawn(process.execPath, [BIN, 'proxy', '--port', '0', '--admin-port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => (stdout += c))
  child.stderr.on('data', (c: Buffer) => (stderr += c))
  const lines = new Promise<string[]>((resolve, reject) => {
    child.stdout.on('data', () => {
      const all = stdout.split('\n')
      if (all.length > count) resolve(all.slice(0, count))
    })
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)))
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, lines, exited, output: () => ({ stdout, stderr }) }
}

describe('toolstorm ca', () => {
  it('creates the CA once, owner-only, and explains how to trust it per client', async () => {
    const dir = path.join(root, 'first', 'ca')
    const result = await runCli(['ca', '--dir', dir])
    expect(result.code).toBe(0)
    const cert = path.join(dir, 'ca.pem')
    expect(result.stdout.split('\n')[0]).toBe(`toolstorm CA certificate: ${cert} (created)`)
    expect(result.stdout).toContain(`private key: ${path.join(dir, 'ca-key.pem')} (owner-only; it never leaves this folder)`)
    expect(result.stdout).toContain(`NODE_EXTRA_CA_CERTS=${cert}`)
    expect(result.stdout).toContain(`curl -x http://127.0.0.1:8787 --cacert ${cert}`)
    expect(result.stdout).toContain(`SSL_CERT_FILE=${cert}`)
    expect(result.stdout).toContain(`REQUESTS_CA_BUNDLE=${cert}`)
    expect((await stat(dir)).mode & 0o777).toBe(0o700)
    expect((await stat(path.join(dir, 'ca-key.pem'))).mode & 0o777).toBe(0o600)
    const key = await readFile(path.join(dir, 'ca-key.pem'), 'utf8')
    expect(key).toMatch(/^-----BEGIN PRIVATE KEY-----\n/)
    expect(result.stdout + result.stderr).not.toContain(key.split('\n')[1])

    const again = await runCli(['ca', '--dir', dir])
    expect(again.stdout.split('\n')[0]).toBe(`toolstorm CA certificate: ${cert} (already there)`)
    const fingerprint = (text: string) => /SHA-256 (\S+)/.exec(text)?.[1]
    expect(fingerprint(again.stdout)).toBe(fingerprint(result.stdout))
    expect((await runCli(['ca', '--dir', dir, '--path-only'])).stdout).toBe(`${cert}\n`)
  })

  it('uses TOOLSTORM_CA_DIR, else ~/.toolstorm/ca', async () => {
    const home = path.join(root, 'home')
    const byEnv = await runCli(['ca', '--path-only'], { env: isolatedEnv(home, { TOOLSTORM_CA_DIR: path.join(root, 'by-env') }) })
    expect(byEnv.stdout).toBe(`${path.join(root, 'by-env', 'ca.pem')}\n`)
    const byHome = await runCli(['ca', '--path-only'], { env: isolatedEnv(home) })
    expect(byHome.stdout).toBe(`${path.join(home, '.toolstorm', 'ca', 'ca.pem')}\n`)
  })

  it('exits 2 when the key is readable by other users, naming the file and the fix', async () => {
    const dir = path.join(root, 'loose')
    await runCli(['ca', '--dir', dir])
    await chmod(path.join(dir, 'ca-key.pem'), 0o644)
    const result = await runCli(['ca', '--dir', dir])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(`[toolstorm] Failed to load the toolstorm CA from ${dir}: ca-key.pem is readable by other users (mode 0644). Run "chmod 600 ${path.join(dir, 'ca-key.pem')}"`)
    expect(result.stderr).toContain('(ERR_CA_INVALID)')
  })
})

describe('toolstorm proxy with HTTPS', () => {
  it('uses the CA "toolstorm ca" made (--ca-dir), so curl trusting it sees the faults', async () => {
    const dir = path.join(root, 'shared-ca')
    const made = await runCli(['ca', '--dir', dir])
    const rules = path.join(root, 'rules.json')
    await writeFile(rules, JSON.stringify({ seed: 1, rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 1 }] }))
    const report = path.join(root, 'https-report.json')
    const proc = startProxyCli(['--ca-dir', dir, '--connect-port', String(upstream.port), '--upstream-ca', upstreamCaFile, '--rules', rules, '--report', report], isolatedEnv(path.join(root, 'home2')))
    const [first, , , fourth] = await proc.lines
    const proxyUrl = /^toolstorm proxy (\S+) \(forward mode/.exec(first!)?.[1] as string
    expect(fourth).toBe(`HTTPS: CONNECT is intercepted with the CA ${path.join(dir, 'ca.pem')} (trust it in clients: toolstorm ca --dir ${dir})`)
    const curl = (pathname: string) =>
      run('curl', ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-x', proxyUrl, '--cacert', path.join(dir, 'ca.pem'), `${upstream.url}${pathname}`], { env: { ...process.env, NO_PROXY: '', no_proxy: '' } })
    expect((await curl('/items/a')).stdout).toBe('429')
    expect((await curl('/items/a')).stdout).toBe('200')
    proc.child.kill('SIGTERM')
    expect(await proc.exited).toBe(0)
    const key = (await readFile(path.join(dir, 'ca-key.pem'), 'utf8')).split('\n')[1] as string
    const saved = await readFile(report, 'utf8')
    expect(JSON.parse(saved).calls.map((c: { url: string; status: number }) => [c.url, c.status])).toEqual([
      [`${upstream.url}/items/a`, 429],
      [`${upstream.url}/items/a`, 200],
    ])
    for (const text of [saved, proc.output().stdout, proc.output().stderr]) expect(text).not.toContain(key)
    expect(proc.output().stderr).not.toContain('created a new CA')
    expect(made.stdout).toContain('(created)')
  })

  it('creates the CA in the home folder "toolstorm ca" reports on the first intercepted HTTPS connection, not before', async () => {
    const home = path.join(root, 'home3')
    const dir = path.join(home, '.toolstorm', 'ca')
    const env = isolatedEnv(home, { NO_PROXY: '', no_proxy: '' })
    const proc = startProxyCli(['--connect-port', String(upstream.port), '--upstream-ca', upstreamCaFile], env)
    const [first, , , fourth] = await proc.lines
    const proxyUrl = /^toolstorm proxy (\S+) \(forward mode/.exec(first!)?.[1] as string
    expect(fourth).toContain(`with the CA ${path.join(dir, 'ca.pem')}`)
    // Plain HTTP and a refused CONNECT need no CA: nothing is written.
    const plain = await startUpstream()
    try {
      expect((await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-x', proxyUrl, `${plain.url}/items/a`], { env })).stdout).toBe('200')
    } finally {
      await plain.close()
    }
    expect((await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_connect}', '-x', proxyUrl, 'https://127.0.0.1:22/'], { env }).catch((error: { stdout: string }) => error)).stdout).toBe('403')
    await expect(stat(path.join(home, '.toolstorm'))).rejects.toMatchObject({ code: 'ENOENT' })
    // The first intercepted TLS handshake makes it (curl -k: there was nothing to trust before).
    expect((await run('curl', ['-sk', '-o', '/dev/null', '-w', '%{http_code}', '-x', proxyUrl, `${upstream.url}/items/a`], { env })).stdout).toBe('200')
    proc.child.kill('SIGTERM')
    expect(await proc.exited).toBe(0)
    expect(proc.output().stderr).toContain(`created a new CA in ${dir}.`)
    const ca = await runCli(['ca'], { env })
    expect(ca.stdout.split('\n')[0]).toBe(`toolstorm CA certificate: ${path.join(dir, 'ca.pem')} (already there)`)
  })

  it('opens the CA at start where clients may need it at once: a folder named by TOOLSTORM_CA_DIR, and a program that asks for the ready line', async () => {
    const named = path.join(root, 'named-ca')
    const byEnv = startProxyCli([], isolatedEnv(path.join(root, 'home4'), { TOOLSTORM_CA_DIR: named }))
    await byEnv.lines
    await expect(stat(path.join(named, 'ca.pem'))).resolves.toBeTruthy()
    byEnv.child.kill('SIGTERM')
    expect(await byEnv.exited).toBe(0)
    const home = path.join(root, 'home5')
    const announced = startProxyCli(['--ready-json'], isolatedEnv(home), 1)
    const [line] = await announced.lines
    expect(JSON.parse(line as string).ca).toBe(path.join(home, '.toolstorm', 'ca', 'ca.pem'))
    await expect(stat(path.join(home, '.toolstorm', 'ca', 'ca.pem'))).resolves.toBeTruthy()
    announced.child.kill('SIGTERM')
    expect(await announced.exited).toBe(0)
  })

  it('warns loudly when upstream verification is turned off', async () => {
    const proc = startProxyCli(['--target', upstream.url, '--insecure-skip-upstream-tls-verification'], isolatedEnv(path.join(root, 'home4')), 2)
    await proc.lines
    proc.child.kill('SIGTERM')
    expect(await proc.exited).toBe(0)
    expect(proc.output().stderr).toContain('[toolstorm] WARNING: upstream HTTPS certificates are NOT verified (--insecure-skip-upstream-tls-verification)')
  })

  it.each([
    [['--upstream-ca', '/no/such/ca.pem'], 'Failed to read --upstream-ca /no/such/ca.pem: no such file. Pass a PEM file of CA certificates.'],
    [['--connect-port', '70000'], '--connect-port: expected an integer 1-65535, got "70000".'],
  ])('exits 2 on %j', async (args, message) => {
    const result = await runCli(['proxy', '--port', '0', '--admin-port', '0', ...args], { env: isolatedEnv(path.join(root, 'home5')) })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain(message)
  })
})
