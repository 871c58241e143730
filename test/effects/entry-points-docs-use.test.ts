/**
 * What the docs import, the entry points export (#29 item 7): `openCertificateAuthority` from
 * `toolstorm/proxy` (docs/https.md's library options), and `stats()`/`flush()` beside
 * `reportEffect` in `toolstorm/effects` (docs/proxy.md; the Python helper has them). Imported
 * through the package's own exports, as a user's project does.
 */
import http from 'node:http'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { flush, reportEffect, stats } from 'toolstorm/effects'
import { openCertificateAuthority, startProxy } from 'toolstorm/proxy'
import { closing, closingServer, settingEnv, temporaryFolder } from '../helpers/teardown.js'

describe('entry points the docs use', () => {
  it('opens the CA of a folder from toolstorm/proxy and gives it to startProxy', async () => {
    const dir = await temporaryFolder('toolstorm-ca-entry-')
    const { ca, created } = await openCertificateAuthority(path.join(dir, 'ca'))
    expect(created).toBe(true)
    const proxy = closing(await startProxy({ ca }))
    expect(proxy.ca?.certificatePath).toBe(path.join(dir, 'ca', 'ca.pem'))
  })

  it('counts what reportEffect sent and skipped with stats(), and flush() waits for pending reports', async () => {
    const proxy = closing(await startProxy({ config: {} }))
    settingEnv({ TOOLSTORM_SIDECAR: proxy.adminUrl })
    // A request the proxy served carries its call id; the tool side reports against it.
    const upstream = closingServer(
      http.createServer((req, res) => {
        void reportEffect(req, 'shipment', 'o-1').then(() => res.end('ok'))
      }),
    )
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    const port = (upstream.address() as { port: number }).port
    const dispatcher = new (await import('undici')).ProxyAgent({ uri: proxy.url, proxyTunnel: false })
    await (await (await import('undici')).fetch(`http://127.0.0.1:${port}/ship`, { dispatcher })).text()
    await dispatcher.close()
    expect(await reportEffect({ headers: {} }, 'shipment', 'no-call')).toBe(false)
    await flush()
    expect(stats()).toEqual({ sent: 1, dropped: 0, skipped: 1, pending: 0 })
    expect(proxy.storm.report().effects).toMatchObject([{ name: 'shipment', key: 'o-1' }])
  })
})
