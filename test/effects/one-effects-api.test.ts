/**
 * One effects call for every mode: the same tool server code (`ToolstormEffects#report` or
 * `reportEffect`) records into an in-process storm (intercept()), or posts to a proxy whose admin
 * port was only known after the helper was made: the sidecar is resolved when a report is sent.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { reportEffect, stats, ToolstormEffects } from '../../src/effects/toolstorm-effects.js'
import { contract } from '../../src/contracts/contract.js'
import { createStorm } from '../../src/create-storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { closing, closingServer, settingEnv } from '../helpers/teardown.js'

/** A tool server that commits a shipment per request and reports it with `report`. */
async function toolServer(report: (req: http.IncomingMessage, order: string) => Promise<boolean>): Promise<string> {
  const server = closingServer(http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const { order } = JSON.parse(Buffer.concat(chunks).toString()) as { order: string }
      const reported = await report(req, order)
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ reported }))
    })
  }))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function proxyTo(target: string): Promise<ProxyServer> {
  return closing(await startProxy({ targets: [target], config: { rules: [] } }))
}

const ship = async (base: string, order: string) => (await (await fetch(`${base}/ship`, { method: 'POST', body: JSON.stringify({ order }) })).json()) as { reported: boolean }

describe('one effects API', () => {
  it('reportEffect records into the in-process storm of intercept(), with no sidecar', async () => {
    const before = stats()
    const base = await toolServer((req, order) => reportEffect(req, 'shipment', order))
    const storm = createStorm({ rules: [] })
    closing(intercept(storm))
    expect(await ship(base, 'o-1')).toEqual({ reported: true })
    expect(await ship(base, 'o-1')).toEqual({ reported: true })
    expect(storm.report().effects.map((effect) => [effect.name, effect.key, effect.call, effect.identity])).toEqual([
      ['shipment', 'o-1', 1, 1],
      ['shipment', 'o-1', 2, 1],
    ])
    const after = stats()
    expect({ sent: after.sent - before.sent, dropped: after.dropped - before.dropped }).toEqual({ sent: 2, dropped: 0 })
  })

  it('an effect the in-process storm refuses is counted in its run, and the contracts on effects fail', async () => {
    const effects = new ToolstormEffects({ warn: () => undefined })
    // The tool server names its effect after the whole order: past the 200 characters an effect name may have.
    const base = await toolServer((req, order) => effects.report(req, order, 'k'))
    const storm = createStorm({ rules: [] })
    closing(intercept(storm))
    expect(await ship(base, 'o'.repeat(201))).toEqual({ reported: false })
    expect(storm.report().refusedEffects).toEqual({ count: 1, first: 'Failed to record an effect: name and key must be strings of 1–200 characters.' })
    expect(contract(storm.report()).noDuplicateEffects().passed).toBe(false)
    expect(effects.stats()).toMatchObject({ sent: 0, dropped: 1 })
  })

  it('a helper made before the proxy started reports to it: the sidecar is resolved per report', async () => {
    const effects = new ToolstormEffects({ warn: () => undefined })
    const base = await toolServer((req, order) => effects.report(req, 'shipment', order))
    const proxy = await proxyTo(base)
    expect(await ship(proxy.url, 'o-2')).toEqual({ reported: true })
    expect(proxy.storm.report().effects.map((effect) => [effect.key, effect.call])).toEqual([['o-2', 1]])
    expect(effects.stats()).toEqual({ sent: 1, dropped: 0, skipped: 0, pending: 0 })
  })

  it('TOOLSTORM_SIDECAR set after the helper was made wins over the newest proxy; effectsEnv holds it', async () => {
    const effects = new ToolstormEffects({ warn: () => undefined })
    const base = await toolServer((req, order) => effects.report(req, 'shipment', order))
    const named = await proxyTo(base)
    const newest = await proxyTo(base)
    expect(named.effectsEnv).toEqual({ TOOLSTORM_SIDECAR: named.adminUrl, TOOLSTORM_ADMIN_TOKEN: named.token })
    settingEnv(named.effectsEnv)
    expect(await ship(named.url, 'o-3')).toEqual({ reported: true })
    expect(named.storm.report().effects.map((effect) => effect.key)).toEqual(['o-3'])
    expect(newest.storm.report().effects).toEqual([])
  })
})
