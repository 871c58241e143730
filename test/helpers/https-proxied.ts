/**
 * A real HTTPS upstream (its own test CA) behind a real forward proxy that intercepts HTTPS with
 * a toolstorm CA kept in a temporary folder, as `toolstorm ca` makes it. The tool server reports
 * commits through the effects helper, as a user's would.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { ProxyAgent } from 'undici'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import type { Report } from '../../src/engine/schema/report.js'
import { ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import { startProxy, type ProxyOptions, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { openCertificateAuthority, type CertificateAuthority } from '../../src/proxy/tls/certificate-authority.js'
import { FAULT_RULES } from './proxied.js'
import { createTestCa, type TestCa } from './test-ca.js'
import { startUpstream, type Upstream } from './upstream.js'

export interface HttpsProxied {
  readonly proxy: ProxyServer
  readonly upstream: Upstream
  /** The upstream's own CA (what `--upstream-ca` trusts). */
  readonly upstreamCa: TestCa
  /** The toolstorm CA the proxy intercepts with, on disk. */
  readonly ca: CertificateAuthority
  readonly caPath: string
  /** `https://127.0.0.1:<upstream port>`: what a client requests through the proxy. */
  readonly base: string
  /** An undici ProxyAgent that tunnels through the proxy and trusts the toolstorm CA. */
  readonly dispatcher: ProxyAgent
  readonly effects: ToolstormEffects
  report(run?: string): Promise<Report>
  close(): Promise<void>
}

let sharedUpstreamCa: Promise<TestCa> | null = null

/** The upstream test CA, made once per test file. */
export function upstreamTestCa(): Promise<TestCa> {
  sharedUpstreamCa ??= createTestCa()
  return sharedUpstreamCa
}

export async function startHttpsProxied(config: StormConfigInput = FAULT_RULES, extra: Partial<ProxyOptions> & { trustUpstream?: boolean } = {}): Promise<HttpsProxied> {
  const { trustUpstream = true, ...proxyExtra } = extra
  const upstreamCa = await upstreamTestCa()
  let effects: ToolstormEffects | null = null
  const upstream = await startUpstream({
    tls: await upstreamCa.issue(['127.0.0.1', 'localhost']),
    onCommit: async (name, key, request) => {
      await effects?.report(request, name, key)
    },
  })
  const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-https-'))
  const { ca } = await openCertificateAuthority(path.join(dir, 'ca'))
  const proxy = await startProxy({ config, ca, connectPorts: [upstream.port], ...(trustUpstream ? { upstreamCa: [upstreamCa.certPem] } : {}), ...proxyExtra })
  effects = new ToolstormEffects({ sidecarUrl: proxy.adminUrl })
  const dispatcher = new ProxyAgent({ uri: proxy.url, requestTls: { ca: ca.certificatePem } })
  let closed: Promise<void> | null = null
  return {
    proxy,
    upstream,
    upstreamCa,
    ca,
    caPath: ca.certificatePath as string,
    base: upstream.url,
    dispatcher,
    effects,
    report: async (run) => {
      const response = await fetch(`${proxy.adminUrl}/report${run ? `?run=${encodeURIComponent(run)}` : ''}`, { headers: { authorization: `Bearer ${proxy.token}` } })
      return (await response.json()) as Report
    },
    // Once: a test may close it itself, and closing() closes it again.
    close: () =>
      (closed ??= (async () => {
        await dispatcher.close()
        await proxy.close()
        await upstream.close()
        await rm(dir, { recursive: true, force: true })
      })()),
  }
}
