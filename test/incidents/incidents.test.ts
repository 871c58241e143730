/**
 * The flight recorder (`--incidents DIR`, docs/incidents.md): of many runs, only the ones that went
 * wrong are kept, each as a small cassette of its own run that replays the failure offline.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { startProxy, type ProxyServer } from '../../src/proxy/proxy-server.js'
import { runCli } from '../helpers/cli.js'
import { startCliProxy } from '../helpers/cli-proxy.js'
import { test as it } from '../helpers/file-fixtures.js'
import { closing, closingServer, temporaryFolder } from '../helpers/teardown.js'

interface Shop {
  readonly url: string
  /** Where the tool server reports its commits (the proxy's admin API). */
  sidecar: { url: string; token: string } | null
}

/**
 * A tool server: `GET /items/:id`, and `POST /ship` that commits (reporting the effect) and answers
 * 201, or after committing answers 500 (`x-fail: 500`) or resets the connection (`x-fail: reset`).
 */
async function startShop(): Promise<Shop> {
  const shop: Shop = { url: '', sidecar: null }
  const server = closingServer(
    http.createServer((req, res) => {
      let body = ''
      req.on('data', (chunk: Buffer) => (body += chunk))
      req.on('end', async () => {
        if (req.method === 'GET') {
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: req.url, stock: 3 }))
          return
        }
        const order = (JSON.parse(body) as { order: string }).order
        const call = req.headers['x-toolstorm-call']
        if (shop.sidecar && typeof call === 'string') {
          await fetch(`${shop.sidecar.url}/effects`, { method: 'POST', headers: { authorization: `Bearer ${shop.sidecar.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'shipment', key: order, call }) })
        }
        if (req.headers['x-fail'] === 'reset') return req.socket.destroy()
        if (req.headers['x-fail'] === '500') return res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"db timeout"}')
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ shipment: order }))
      })
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return Object.assign(shop, { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })
}

/** One agent run: a read, then a shipment (twice when `ship` says so, as a careless retry would). */
async function agentRun(base: string, run: string, fail: '500' | 'reset' | null, ships = 1): Promise<string[]> {
  const headers = { 'x-toolstorm-run': run, 'content-type': 'application/json', ...(fail ? { 'x-fail': fail } : {}) }
  const seen: string[] = []
  seen.push(String((await fetch(`${base}/items/${run}`, { headers: { 'x-toolstorm-run': run } })).status))
  for (let i = 0; i < ships; i++) {
    seen.push(await fetch(`${base}/ship`, { method: 'POST', headers, body: JSON.stringify({ order: `order-${run}` }) }).then((r) => r.text().then(() => String(r.status)), () => 'reset'))
  }
  return seen
}

async function incidentFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.endsWith('.jsonl') && name !== 'index.jsonl').sort()
}

async function indexLines(dir: string): Promise<Array<Record<string, unknown>>> {
  return (await readFile(path.join(dir, 'index.jsonl'), 'utf8')).split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>)
}

const FAILING: Record<string, { fail: '500' | 'reset' | null; ships: number }> = {
  'run-017': { fail: '500', ships: 1 },
  'run-123': { fail: 'reset', ships: 1 },
  'run-250': { fail: null, ships: 2 },
}

describe('--incidents: the flight recorder', { timeout: 180_000 }, () => {
  it('of 300 runs with 3 failing keeps exactly 3 cassettes, each with only its run, each replaying its failure offline', async () => {
    const dir = await temporaryFolder('toolstorm-incidents-')
    const shop = await startShop()
    const proxy: ProxyServer = closing(await startProxy({ targets: [shop.url], incidents: { dir, runIdleMs: 1500 } }))
    shop.sidecar = { url: proxy.adminUrl, token: proxy.token }
    const runs = Array.from({ length: 300 }, (_, i) => `run-${String(i).padStart(3, '0')}`)
    // What the agent saw live, per failing run: the replay must give it the same.
    const live: Record<string, string> = {}
    for (let i = 0; i < runs.length; i += 20) {
      await Promise.all(
        runs.slice(i, i + 20).map(async (run) => {
          const seen = await agentRun(proxy.url, run, FAILING[run]?.fail ?? null, FAILING[run]?.ships ?? 1)
          if (FAILING[run]) live[run] = seen.join(' ')
        }),
      )
    }
    expect(live).toEqual({ 'run-017': '200 500', 'run-123': expect.stringMatching(/^200 (reset|502)$/), 'run-250': '200 201 201' })
    // Runs end by going idle; the proxy decides them as they do.
    const deadline = Date.now() + 20_000
    for (;;) {
      const status = (await (await fetch(`${proxy.adminUrl}/incidents`, { headers: { authorization: `Bearer ${proxy.token}` } })).json()) as { decided: number; kept: number; openRuns: number }
      // A run idle between two of its calls on a loaded machine is decided, then again when it ends: at least 300 decisions.
      if ((status.decided >= 300 && status.openRuns === 0) || Date.now() > deadline) {
        expect(status).toMatchObject({ kept: 3, openRuns: 0 })
        expect(status.decided).toBeGreaterThanOrEqual(300)
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await proxy.close()

    const files = await incidentFiles(dir)
    expect(files).toHaveLength(3)
    const index = await indexLines(dir)
    expect(index.map((line) => [line.run, line.why])).toEqual(
      expect.arrayContaining([
        ['run-017', ['upstream_error']],
        ['run-123', ['upstream_failure']],
        ['run-250', ['duplicate_effect']],
      ]),
    )
    expect(index).toHaveLength(3)
    for (const line of index) {
      const cassette = await Cassette.load(path.join(dir, line.incident as string))
      // Only its run, whole: the read and its shipment(s), each call numbered as it was.
      expect(new Set(cassette.exchanges.map((exchange) => exchange.run))).toEqual(new Set([line.run]))
      expect(cassette.exchanges.map((exchange) => exchange.request.url)).toEqual([`/items/${line.run as string}`, ...Array(FAILING[line.run as string]!.ships).fill('/ship')])
      const report = JSON.parse(await readFile(path.join(dir, (line.incident as string).replace(/\.jsonl$/, '.report.json')), 'utf8')) as { run: string; calls: unknown[] }
      expect([report.run, report.calls.length]).toEqual([line.run, 1 + FAILING[line.run as string]!.ships])
    }
    // Offline: toolstorm replay serves each incident to the same agent, and the failure comes back.
    const script = path.join(dir, 'agent.mjs')
    await writeFile(
      script,
      `const [run, fail, ships] = process.argv.slice(2)
const base = process.env.TOOLSTORM_PROXY_URL
const seen = [String((await fetch(base + '/items/' + run, { headers: { 'x-toolstorm-run': run } })).status)]
for (let i = 0; i < Number(ships); i++) seen.push(await fetch(base + '/ship', { method: 'POST', headers: { 'x-toolstorm-run': run, 'content-type': 'application/json', ...(fail !== 'none' ? { 'x-fail': fail } : {}) }, body: JSON.stringify({ order: 'order-' + run }) }).then((r) => r.text().then(() => String(r.status)), () => 'reset'))
console.log(seen.join(' '))
`,
    )
    for (const line of index) {
      const run = line.run as string
      const replayed = await runCli(['replay', path.join(dir, line.incident as string), '--port', '0', '--admin-port', '0', '--', process.execPath, script, run, FAILING[run]!.fail ?? 'none', String(FAILING[run]!.ships)])
      expect(replayed.stdout.trim(), replayed.stderr).toBe(live[run])
      // The duplicate is a fixture that fails: replay runs the contracts on what it served.
      if (run === 'run-250') expect([replayed.code, replayed.stderr]).toEqual([1, expect.stringContaining('shipment key "order-run-250" committed 2 times (calls 2, 3)')])
      else expect(replayed.code, replayed.stderr).toBe(0)
    }
  })

  it('honours --max-incidents and --max-bytes, deleting the oldest first, counted in the index and GET /incidents', async () => {
    const dir = await temporaryFolder('toolstorm-incidents-bound-')
    const shop = await startShop()
    const proxy = closing(await startProxy({ targets: [shop.url], incidents: { dir, runIdleMs: 60_000, maxIncidents: 2 } }))
    shop.sidecar = { url: proxy.adminUrl, token: proxy.token }
    const auth = { authorization: `Bearer ${proxy.token}` }
    for (let i = 0; i < 5; i++) {
      const run = `bad-${i}`
      await agentRun(proxy.url, run, '500')
      // An explicit end (a job's teardown): decided now, in order.
      const ended = (await (await fetch(`${proxy.adminUrl}/runs/end?run=${run}`, { method: 'POST', headers: auth })).json()) as { incident: { run: string } | null }
      expect(ended.incident?.run).toBe(run)
    }
    const status = (await (await fetch(`${proxy.adminUrl}/incidents`, { headers: auth })).json()) as { incidents: Array<{ run: string }>; evicted: number }
    expect(status.incidents.map((entry) => entry.run)).toEqual(['bad-3', 'bad-4'])
    expect(status.evicted).toBe(3)
    expect(await incidentFiles(dir)).toHaveLength(2)
    const evicted = (await indexLines(dir)).filter((line) => 'evicted' in line)
    expect(evicted.map((line) => [line.run, line.reason])).toEqual([
      ['bad-0', '--max-incidents 2'],
      ['bad-1', '--max-incidents 2'],
      ['bad-2', '--max-incidents 2'],
    ])
    await proxy.close()

    // The same folder again with a byte bound below what is there: the oldest goes at once.
    const sizes = await Promise.all((await incidentFiles(dir)).map(async (name) => (await readFile(path.join(dir, name))).length))
    const again = closing(await startProxy({ targets: [shop.url], incidents: { dir, maxBytes: Math.max(1024, Math.max(...sizes) + 2000) } }))
    expect(again.incidents?.store.incidents.map((entry) => entry.run)).toEqual(['bad-4'])
    expect(again.incidents?.store.evicted).toBe(4)
  })

  it('POST /incidents keeps a run that went fine when someone says so, and says when a run is no longer held', async () => {
    const dir = await temporaryFolder('toolstorm-incidents-mark-')
    const shop = await startShop()
    const proxy = closing(await startProxy({ targets: [shop.url], incidents: { dir, runIdleMs: 60_000 } }))
    const auth = { authorization: `Bearer ${proxy.token}`, 'content-type': 'application/json' }
    await agentRun(proxy.url, 'looks-fine', null)
    const marked = await fetch(`${proxy.adminUrl}/incidents?run=looks-fine`, { method: 'POST', headers: auth, body: JSON.stringify({ reason: 'customer says the label never printed' }) })
    expect([marked.status, ((await marked.json()) as { state: string }).state]).toEqual([202, 'pending'])
    const ended = (await (await fetch(`${proxy.adminUrl}/runs/end?run=looks-fine`, { method: 'POST', headers: auth })).json()) as { incident: { why: string[]; detail: string[] } }
    expect(ended.incident).toMatchObject({ why: ['marked'], detail: ['customer says the label never printed'] })
    const unknown = await fetch(`${proxy.adminUrl}/incidents?run=never-seen`, { method: 'POST', headers: auth })
    expect(unknown.status).toBe(404)
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toContain('Failed to keep run "never-seen" as an incident: its exchanges are no longer held')
  })

  it('kill -9 while incidents are written leaves every file valid, and the next start indexes what the kill left unindexed', async () => {
    const dir = await temporaryFolder('toolstorm-incidents-kill-')
    const shop = await startShop()
    const { child, url, exited } = await startCliProxy(['--target', shop.url, '--incidents', dir, '--run-idle', '0.1'])
    // Every run fails (a 500 after the commit): incidents are written all the time.
    let stop = false
    const traffic = [0, 1, 2, 3].map(async (worker) => {
      for (let i = 0; !stop; i++) await agentRun(url, `w${worker}-${i}`, '500').catch(() => undefined)
    })
    // Once a few incidents are written, while more are: the kill lands among them.
    await expect.poll(async () => (await readdir(dir).catch(() => [])).filter((name) => name.endsWith('.jsonl') && name !== 'index.jsonl').length, { timeout: 20_000, interval: 25 }).toBeGreaterThanOrEqual(4)
    child.kill('SIGKILL')
    await exited
    stop = true
    await Promise.all(traffic)

    const files = await incidentFiles(dir)
    expect(files.length).toBeGreaterThan(3)
    for (const name of files) {
      const cassette = await Cassette.load(path.join(dir, name))
      expect(cassette.exchanges.length).toBeGreaterThan(0)
    }
    for (const name of (await readdir(dir)).filter((n) => n.endsWith('.report.json'))) JSON.parse(await readFile(path.join(dir, name), 'utf8'))
    // The index's complete lines parse; a file it does not name is indexed at the next start.
    const text = await readFile(path.join(dir, 'index.jsonl'), 'utf8')
    const complete = text.slice(0, text.lastIndexOf('\n') + 1)
    const indexed = new Set(complete.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { incident: string }).incident))
    const again = closing(await startProxy({ targets: [shop.url], incidents: { dir } }))
    expect(new Set(again.incidents?.store.incidents.map((entry) => entry.incident))).toEqual(new Set(files))
    expect(again.incidents?.store.incidents.filter((entry) => entry.recovered).map((entry) => entry.incident)).toEqual(files.filter((name) => !indexed.has(name)))
  })
})
