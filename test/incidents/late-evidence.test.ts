/**
 * The flight recorder keeps every run that went wrong, also when the evidence comes late or the run's
 * report is gone: an effect reported after the run ended, a run evicted by --max-runs before it was
 * decided, a failing run still open when the proxy is told to stop (SIGTERM).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { runCli } from '../helpers/cli.js'
import { startCliProxy } from '../helpers/cli-proxy.js'
import { test as it } from '../helpers/file-fixtures.js'
import { closing, closingServer, temporaryFolder } from '../helpers/teardown.js'

interface Shop {
  readonly url: string
  sidecar: string
  /** Call ids of the shipments answered, for an effect reported after the answer. */
  readonly answered: string[]
}

/** A tool server whose `POST /ship` commits; it reports the commit before answering unless `x-report: later`, then answers 201 (500 with `x-fail: 500`). */
async function startShop(): Promise<Shop> {
  const shop: Shop = { url: '', sidecar: '', answered: [] }
  const server = closingServer(
    http.createServer((req, res) => {
      let body = ''
      req.on('data', (chunk: Buffer) => (body += chunk))
      req.on('end', async () => {
        const order = (JSON.parse(body || '{}') as { order?: string }).order ?? 'none'
        const call = req.headers['x-toolstorm-call'] as string
        if (req.headers['x-report'] === 'later') shop.answered.push(call)
        else await reportEffect(shop.sidecar, call, order)
        if (req.headers['x-fail'] === '500') return res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"db timeout"}')
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ shipment: order }))
      })
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return Object.assign(shop, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })
}

async function reportEffect(sidecar: string, call: string, key: string): Promise<void> {
  const answer = await fetch(`${sidecar}/effects`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'shipment', key, call }) })
  expect(answer.status, await answer.text()).toBeLessThan(300)
}

async function ship(base: string, run: string, order: string, headers: Record<string, string> = {}): Promise<number> {
  const answer = await fetch(`${base}/ship`, { method: 'POST', headers: { 'x-toolstorm-run': run, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ order }) })
  await answer.text()
  return answer.status
}

async function indexLines(dir: string): Promise<Array<{ run: string; why: string[]; incident: string }>> {
  const text = await readFile(path.join(dir, 'index.jsonl'), 'utf8').catch(() => '')
  return text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { run: string; why: string[]; incident: string })
}

/** The one incident in `dir`: its cassette holds both commits, and `toolstorm check` fails its report and its cassette on them. */
async function expectCheckFails(dir: string, finding: string): Promise<void> {
  const [line] = await indexLines(dir)
  const cassette = path.join(dir, line!.incident)
  for (const file of [cassette.replace(/\.jsonl$/, '.report.json'), cassette]) {
    const checked = await runCli(['check', file])
    expect([checked.code, checked.stdout + checked.stderr], file).toEqual([1, expect.stringContaining(finding)])
  }
}

describe('--incidents: late and lost evidence', { timeout: 60_000 }, () => {
  it('keeps a run whose duplicate commit is reported after the run was ended', async () => {
    const dir = await temporaryFolder('toolstorm-incidents-late-')
    const shop = await startShop()
    const proxy = closing(await startProxy({ targets: [shop.url], incidents: { dir, runIdleMs: 60_000 } }))
    shop.sidecar = proxy.adminUrl
    const auth = { authorization: `Bearer ${proxy.token}` }
    expect(await ship(proxy.url, 'late-1', 'o-1')).toBe(201)
    // The retry's commit is reported by a background job, after the answer and after the run's end.
    expect(await ship(proxy.url, 'late-1', 'o-1', { 'x-report': 'later' })).toBe(201)
    const ended = (await (await fetch(`${proxy.adminUrl}/runs/end?run=late-1`, { method: 'POST', headers: auth })).json()) as { incident: unknown }
    expect(ended.incident).toBeNull()
    await reportEffect(proxy.adminUrl, shop.answered[0]!, 'o-1')
    const report = (await (await fetch(`${proxy.adminUrl}/report?run=late-1`, { headers: auth })).json()) as { effects: unknown[] }
    expect(report.effects).toHaveLength(2)
    await expect.poll(async () => (await indexLines(dir)).map((line) => [line.run, line.why]), { timeout: 5000 }).toEqual([['late-1', ['duplicate_effect']]])
    await expectCheckFails(dir, 'shipment key "o-1" committed 2 times (calls 1, 2)')
  })

  it('keeps a run with a duplicate commit that --max-runs evicted from memory before it was decided', async () => {
    const dir = await temporaryFolder('toolstorm-incidents-evicted-')
    const shop = await startShop()
    const proxy = closing(await startProxy({ targets: [shop.url], incidents: { dir, runIdleMs: 60_000 } }))
    proxy.storm.ledger.maxRuns = 1 // --max-runs 1
    shop.sidecar = proxy.adminUrl
    const auth = { authorization: `Bearer ${proxy.token}` }
    expect([await ship(proxy.url, 'twice', 'o-7'), await ship(proxy.url, 'twice', 'o-7')]).toEqual([201, 201])
    expect(await ship(proxy.url, 'other', 'o-8')).toBe(201)
    expect((await fetch(`${proxy.adminUrl}/report?run=twice`, { headers: auth })).status).toBe(410)
    const ended = (await (await fetch(`${proxy.adminUrl}/runs/end?run=twice`, { method: 'POST', headers: auth })).json()) as { incident: { why: string[]; detail: string[] } | null }
    expect(ended.incident).toMatchObject({ why: ['duplicate_effect'], detail: ['shipment key "o-7" committed 2 times (calls 1, 2)'] })
    await expectCheckFails(dir, 'shipment key "o-7" committed 2 times (calls 1, 2)')
  })

  it('keeps the runs still open when toolstorm proxy is stopped with SIGTERM: an upstream 500 and a duplicate commit', async () => {
    const dir = await temporaryFolder('toolstorm-incidents-sigterm-')
    const shop = await startShop()
    const proxy = await startCliProxy(['--target', shop.url, '--incidents', dir, '--run-idle', '60'])
    shop.sidecar = proxy.adminUrl
    expect(await ship(proxy.url, 'failed-500', 'o-1', { 'x-fail': '500' })).toBe(500)
    expect([await ship(proxy.url, 'shipped-twice', 'o-2'), await ship(proxy.url, 'shipped-twice', 'o-2')]).toEqual([201, 201])
    expect(await ship(proxy.url, 'fine', 'o-3')).toBe(201)
    expect(await readdir(dir)).not.toContain('index.jsonl')
    const stderr = await proxy.stop()
    expect(await proxy.exited).toBe(0)
    expect((await indexLines(dir)).map((line) => [line.run, line.why]).sort()).toEqual([
      ['failed-500', ['upstream_error']],
      ['shipped-twice', ['duplicate_effect']],
    ])
    expect(stderr).toContain('incidents: 2 of 3 runs kept')
  })
})
