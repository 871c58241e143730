/**
 * The admin API in a container or a cluster (#29): a kubelet probe sends `Host: <pod IP>:8788`,
 * tool servers report effects to the Service by name (`toolstorm:8788`, its FQDN). /healthz
 * answers any Host, IP literals pass, and names are allowed with `--admin-allow-host` /
 * `TOOLSTORM_ADMIN_HOSTS` (exact, or `*.suffix`); any other name is still refused (DNS rebinding).
 */
import { spawn } from 'node:child_process'
import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { BIN, runCli } from '../helpers/cli.js'
import { startProxied } from '../helpers/proxied.js'
import { closing } from '../helpers/teardown.js'

/** A request with the Host (and Origin) a cluster would send, to the admin server on loopback. */
function admin(url: string, headers: Record<string, string>, method = 'GET', body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { ...headers, ...(body ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = ''
      res.on('data', (chunk: Buffer) => (text += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

const FORBIDDEN = 'Failed to use the admin API: the Host or Origin header names another site. Address the admin server by its loopback address, or allow the name with --admin-allow-host (TOOLSTORM_ADMIN_HOSTS).'

describe('admin API Host check in a cluster', () => {
  it('answers a kubelet probe of /healthz whatever its Host, with no configuration', async () => {
    const env = closing(await startProxied('reverse'))
    for (const host of ['10.244.1.17:8788', 'toolstorm:8788', 'attacker.example']) {
      const probe = await admin(`${env.proxy.adminUrl}/healthz`, { host, 'user-agent': 'kube-probe/1.31' })
      expect(probe.status, host).toBe(200)
      expect(JSON.parse(probe.body)).toMatchObject({ ok: true })
    }
  })

  it('accepts IP literals (a pod IP, a Service IP, IPv6) but refuses names by default', async () => {
    const env = closing(await startProxied('reverse'))
    const auth = { authorization: `Bearer ${env.proxy.token}` }
    for (const host of ['10.244.1.17:8788', '10.96.0.12', '[fd00::17]:8788']) expect((await admin(`${env.proxy.adminUrl}/runs`, { ...auth, host })).status, host).toBe(200)
    for (const host of ['toolstorm:8788', 'toolstorm.staging.svc.cluster.local:8788']) {
      const refused = await admin(`${env.proxy.adminUrl}/runs`, { ...auth, host })
      expect(refused.status, host).toBe(403)
      expect(JSON.parse(refused.body)).toEqual({ error: { type: 'admin_error', code: 'ERR_ADMIN_FORBIDDEN', message: FORBIDDEN } })
    }
  })

  it('answers the names given with adminAllowHosts, exact and by suffix, and still refuses others', async () => {
    const env = closing(await startProxied('reverse', undefined, { adminAllowHosts: ['toolstorm', '*.svc.cluster.local'] }))
    const auth = { authorization: `Bearer ${env.proxy.token}` }
    for (const host of ['toolstorm:8788', 'TOOLSTORM', 'toolstorm.staging.svc.cluster.local:8788', 'toolstorm.staging.svc.cluster.local']) {
      expect((await admin(`${env.proxy.adminUrl}/runs`, { ...auth, host })).status, host).toBe(200)
    }
    for (const host of ['toolstorm.evil.example', 'svc.cluster.local', 'toolstorm.svc.cluster.local.evil.example', 'attacker.example:8788']) {
      expect((await admin(`${env.proxy.adminUrl}/runs`, { ...auth, host })).status, host).toBe(403)
    }
    // An allowed Host with a foreign Origin is still a cross-site request.
    expect((await admin(`${env.proxy.adminUrl}/runs`, { ...auth, host: 'toolstorm:8788', origin: 'https://attacker.example' })).status).toBe(403)
    // A tool server reporting its commit to the Service by name, with the call id the request carried.
    const echoed = (await (await fetch(`${env.base}/echo`)).json()) as { headers: Record<string, string> }
    const call = echoed.headers['x-toolstorm-call'] as string
    const effect = await admin(`${env.proxy.adminUrl}/effects`, { host: 'toolstorm.staging.svc.cluster.local:8788' }, 'POST', JSON.stringify({ name: 'shipment', key: 'o-1', call }))
    expect(effect.status).toBe(201)
    expect((await env.report()).effects).toMatchObject([{ name: 'shipment', key: 'o-1' }])
  })

  it('refuses an entry that is not a host name, naming the option', async () => {
    await expect(startProxied('reverse', undefined, { adminAllowHosts: ['a b'] })).rejects.toThrow('Failed to read adminAllowHosts: expected a host name (toolstorm), a suffix (*.svc.cluster.local), an IP address or *, got "a b".')
  })
})

describe('toolstorm proxy --admin-allow-host', () => {
  /** Start the CLI, wait for its admin URL and token, run `use`, then stop it. */
  async function withCli(args: string[], env: NodeJS.ProcessEnv, use: (adminUrl: string, token: string) => Promise<void>): Promise<void> {
    const child = spawn(process.execPath, [BIN, 'proxy', '--target', 'http://127.0.0.1:9', '--port', '0', '--admin-port', '0', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } })
    let stdout = ''
    const started = new Promise<[string, string]>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk
        const url = / · admin (http:\S+)/.exec(stdout)?.[1]
        const token = /admin token: (\S+)/.exec(stdout)?.[1]
        if (url && token) resolve([url, token])
      })
      child.once('exit', (code) => reject(new Error(`exited ${code}`)))
    })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    try {
      const [url, token] = await started
      await use(url, token)
    } finally {
      child.kill('SIGTERM')
      await exited
    }
  }

  it('takes the flag, and TOOLSTORM_ADMIN_HOSTS when the flag is absent', async () => {
    await withCli(['--admin-allow-host', 'toolstorm', '--admin-allow-host', '*.svc.cluster.local'], {}, async (url, token) => {
      expect((await admin(`${url}/runs`, { authorization: `Bearer ${token}`, host: 'toolstorm.ci.svc.cluster.local:8788' })).status).toBe(200)
      expect((await admin(`${url}/runs`, { authorization: `Bearer ${token}`, host: 'elsewhere.example' })).status).toBe(403)
    })
    await withCli([], { TOOLSTORM_ADMIN_HOSTS: 'toolstorm, *.svc.cluster.local' }, async (url, token) => {
      expect((await admin(`${url}/runs`, { authorization: `Bearer ${token}`, host: 'toolstorm:8788' })).status).toBe(200)
    })
  })

  // The data plane's list (--allow-host, test/proxy/dns-rebinding.test.ts) is read by the same code.
  it.each([
    ['--admin-allow-host', 'TOOLSTORM_ADMIN_HOSTS'],
    ['--allow-host', 'TOOLSTORM_ALLOW_HOSTS'],
  ])('exits 2 naming %s or %s for an entry that is not a host name', async (option, variableName) => {
    const flag = await runCli(['proxy', '--port', '0', '--admin-port', '0', option, 'http://toolstorm'])
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain(`Failed to read ${option}: expected a host name (toolstorm), a suffix (*.svc.cluster.local), an IP address or *, got "http://toolstorm".`)
    const variable = await runCli(['proxy', '--port', '0', '--admin-port', '0'], { env: { [variableName]: 'ok,bad/name' } })
    expect(variable.code).toBe(2)
    expect(variable.stderr).toContain(`Failed to read ${variableName}: expected a host name (toolstorm), a suffix (*.svc.cluster.local), an IP address or *, got "bad/name".`)
  })
})
