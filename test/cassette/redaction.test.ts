import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import zlib from 'node:zlib'
import { fetch as undiciFetch } from 'undici'
import { describe, expect } from 'vitest'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { exportHar } from '../../src/cassette/har/har-export.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { fakeSecrets, leaks, type FakeSecrets } from '../helpers/fake-secrets.js'
import { test as it } from '../helpers/file-fixtures.js'
import { closing } from '../helpers/teardown.js'

/** An upstream that hands secrets back in every way a response can: headers, cookies, JSON, SSE, gzip, base64. */
async function startLeakyUpstream(secrets: FakeSecrets): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x')
      if (url.pathname === '/echo') {
        res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': [`session=${secrets.session}; HttpOnly`], 'x-upstream-token': secrets.github })
        return res.end(JSON.stringify({ headers: req.headers, body: Buffer.concat(chunks).toString(), url: req.url }))
      }
      if (url.pathname === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        res.write(`data: ${JSON.stringify({ delta: `key ${secrets.anthropic}` })}\n\n`)
        return res.end(`data: ${JSON.stringify({ api_key: secrets.openai })}\n\ndata: [DONE]\n\n`)
      }
      if (url.pathname === '/gzip') {
        const gz = zlib.gzipSync(JSON.stringify({ token: secrets.jwt, note: `aws ${secrets.aws}` }))
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': gz.length })
        return res.end(gz)
      }
      if (url.pathname === '/authorize') {
        res.writeHead(302, { location: `https://app.example/cb?code=${secrets.session}&state=${url.searchParams.get('state')}` })
        return res.end()
      }
      if (url.pathname === '/blob') {
        res.writeHead(200, { 'content-type': 'application/json' })
        return res.end(JSON.stringify({ data: Buffer.from(`Authorization: Bearer ${secrets.github}`).toString('base64') }))
      }
      res.writeHead(404).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(() => resolve())) }
}

async function recordLeakyTraffic(secrets: FakeSecrets, file: string): Promise<void> {
  const upstream = await startLeakyUpstream(secrets)
  const storm = createStorm({ redact: { keys: ['x-tenant-pass'], secrets: [secrets.password] } })
  const recorder = createCassetteRecorder(storm, { file, source: 'proxy', urlForm: 'origin', targets: [upstream.url] })
  const proxy = await startProxy({ targets: [upstream.url], storm, observer: recorder.observer })
  const send = (pathname: string, init: Parameters<typeof undiciFetch>[1] = {}) => undiciFetch(proxy.url + pathname, init).then((r) => r.text())
  await send(`/echo?api_key=${secrets.openai}&q=${encodeURIComponent(`find ${secrets.github}`)}&next=${encodeURIComponent(`/cb?t=${secrets.jwt}`)}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${secrets.anthropic}`,
      'x-api-key': secrets.openai,
      cookie: `session=${secrets.session}`,
      'x-debug': `retrying with ${secrets.github}`,
      'x-tenant-pass': secrets.session,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ messages: [{ role: 'user', content: `use ${secrets.aws} and ${secrets.password}` }], nested: { credentials: { v: secrets.jwt } }, password: secrets.password }),
  })
  await send('/echo', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `user=agent&password=${encodeURIComponent(secrets.password)}&note=${encodeURIComponent(secrets.github)}` })
  await send('/echo', { method: 'POST', headers: { authorization: `Basic ${Buffer.from(`agent:${secrets.password}`).toString('base64')}` } })
  await send('/stream')
  await send('/gzip')
  await send('/blob')
  await proxy.close()
  await recorder.close()
  await upstream.close()
}

describe('secrets never reach a cassette', () => {
  it('keeps every fake secret out of the raw cassette bytes and their decoded forms', async ({ dir }) => {
    const secrets = fakeSecrets()
    const file = path.join(dir, 'leaky.cassette.jsonl')
    await recordLeakyTraffic(secrets, file)
    const raw = await readFile(file, 'utf8')
    expect(leaks(raw, secrets)).toEqual([])
    // Bodies stored as base64 are decoded and scanned too, as are percent-encoded URLs.
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges).toHaveLength(6)
    for (const exchange of cassette.exchanges) {
      for (const body of [exchange.request.body, exchange.response?.body, exchange.upstream?.body]) {
        if (body) expect(leaks(body.encoding === 'base64' ? Buffer.from(body.data, 'base64').toString('latin1') : body.data, secrets)).toEqual([])
      }
      expect(leaks(decodeURIComponent(exchange.request.url), secrets)).toEqual([])
    }
    // The field stays; its value becomes [REDACTED].
    const first = cassette.exchanges[0]!
    expect(first.request.headers).toMatchObject({ authorization: '[REDACTED]', 'x-api-key': '[REDACTED]', cookie: '[REDACTED]', 'x-tenant-pass': '[REDACTED]' })
    expect([first.response!.headers['set-cookie']].flat()).toEqual(['[REDACTED]'])
    expect(first.request.url).toContain('api_key=[REDACTED]')
    expect(JSON.parse(first.request.body!.data)).toMatchObject({ password: '[REDACTED]', nested: { credentials: '[REDACTED]' } })
    // The HAR export and the cassette's reports are as clean.
    expect(leaks(JSON.stringify(exportHar(cassette)), secrets)).toEqual([])
    expect(leaks(JSON.stringify(cassette.toReports()), secrets)).toEqual([])
    // Whatever was scrubbed, the recording still replays against requests with other real secrets.
    const replay = await startReplayServer(cassette, { order: 'any', allowUnused: true })
    const other = fakeSecrets()
    const response = await undiciFetch(`${replay.url}/echo`, { method: 'POST', headers: { authorization: `Basic ${Buffer.from(`agent:${other.password}`).toString('base64')}` } })
    expect(response.status).toBe(200)
    await response.text()
    expect((await replay.close()).served).toBe(1)
  })

  it('keeps a credential in a URL path out of the route a call is named by (cassette, report), and replays it for another one', async ({ dir }) => {
    const secrets = fakeSecrets()
    const upstream = await startLeakyUpstream(secrets)
    const storm = createStorm({})
    const file = path.join(dir, 'path-token.cassette.jsonl')
    const recorder = createCassetteRecorder(storm, { file, source: 'proxy', urlForm: 'origin', targets: [upstream.url] })
    const proxy = await startProxy({ targets: [upstream.url], storm, observer: recorder.observer })
    expect((await undiciFetch(`${proxy.url}/hooks/${secrets.github}/deliver`, { method: 'POST' })).status).toBe(404)
    const report = storm.report()
    await proxy.close()
    await recorder.close()
    await upstream.close()
    expect(report.calls.map((call) => call.route)).toEqual(['POST /hooks/[REDACTED]/deliver'])
    expect(leaks(JSON.stringify(report), secrets)).toEqual([])
    expect(leaks(await readFile(file, 'utf8'), secrets)).toEqual([])
    const replay = await startReplayServer(await Cassette.load(file))
    expect((await undiciFetch(`${replay.url}/hooks/${fakeSecrets().github}/deliver`, { method: 'POST' })).status).toBe(404)
    expect(await replay.close()).toMatchObject({ passed: true, served: 1 })
  })

  it('keeps OAuth codes and verifiers, nested JSON text, forms in JSON strings, glued key ids and glued base64 out of the cassette and the report, and replays them for other secrets only', async ({ dir }) => {
    const secrets = fakeSecrets()
    const more = { code: secrets.session, verifier: fakeSecrets().session + fakeSecrets().session.slice(0, 11), nested: fakeSecrets().password, form: fakeSecrets().password, part: fakeSecrets().password }
    const upstream = await startLeakyUpstream(secrets)
    const storm = createStorm({})
    const file = path.join(dir, 'oauth.cassette.jsonl')
    const recorder = createCassetteRecorder(storm, { file, source: 'proxy', urlForm: 'origin', targets: [upstream.url] })
    const proxy = await startProxy({ targets: [upstream.url], storm, observer: recorder.observer })
    const send = (pathname: string, init: Parameters<typeof undiciFetch>[1] = {}) => undiciFetch(proxy.url + pathname, { redirect: 'manual', ...init }).then(async (r) => ({ status: r.status, location: r.headers.get('location'), body: await r.text() }))
    const redirect = await send('/authorize?state=s-1')
    expect(redirect.location).toBe(`https://app.example/cb?code=${more.code}&state=s-1`)
    await send(`/echo?code=${more.code}&state=s-1`)
    await send(`/echo?code=${more.code}`)
    await send('/echo?code=US&state=CA')
    const form = { 'content-type': 'application/x-www-form-urlencoded' }
    await send('/echo', { method: 'POST', headers: form, body: `grant_type=authorization_code&code=${more.code}&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&code_verifier=${more.verifier}` })
    let nested = JSON.stringify({ password: more.nested })
    for (let depth = 0; depth < 3; depth++) nested = JSON.stringify({ text: nested })
    const json = { 'content-type': 'application/json' }
    const base64 = Buffer.from(`Authorization: Bearer ${secrets.github}`).toString('base64')
    const multipart = `--b\r\nContent-Disposition: form-data; name="password"\r\n\r\n${more.part}\r\n--b--`
    await send('/echo', { method: 'POST', headers: json, body: JSON.stringify({ nested, raw: `user=a&user[password]=${more.form}`, multipart, key: `id${secrets.aws}x`, blob: `ab${base64}` }) })
    await send('/echo', { method: 'POST', headers: json, body: '{"a":2}' })
    const report = storm.report()
    await proxy.close()
    await recorder.close()
    await upstream.close()
    const raw = await readFile(file, 'utf8')
    expect(leaks(raw, { ...secrets, ...more })).toEqual([])
    expect(leaks(JSON.stringify(report), { ...secrets, ...more })).toEqual([])
    expect(raw).not.toContain(base64.slice(0, 24))
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges[0]!.response!.headers.location).toBe('https://app.example/cb?code=[REDACTED]&state=s-1')
    expect(cassette.exchanges[3]!.request.url).toBe('/echo?code=US&state=CA')

    // A different code (a secret) still matches; a different state, or another country code (no secrets), does not.
    const replayWith = async (pathname: string, init: Parameters<typeof undiciFetch>[1] = {}) => {
      const replay = closing(await startReplayServer(cassette, { order: 'any', allowUnused: true }))
      const answer = await undiciFetch(replay.url + pathname, { redirect: 'manual', ...init })
      await answer.text()
      return { status: answer.status, verdict: await replay.close() }
    }
    const otherCode = fakeSecrets().session
    expect(await replayWith(`/echo?code=${otherCode}&state=s-1`)).toMatchObject({ status: 200, verdict: { passed: true, served: 1 } })
    expect(await replayWith(`/echo?code=${otherCode}`)).toMatchObject({ status: 200, verdict: { passed: true, served: 1 } })
    expect(await replayWith('/echo', { method: 'POST', headers: form, body: `grant_type=authorization_code&code=${otherCode}&redirect_uri=https%3A%2F%2Fapp.example%2Fcb&code_verifier=${fakeSecrets().session}` })).toMatchObject({ status: 200, verdict: { passed: true } })
    expect(await replayWith(`/echo?code=${otherCode}&state=s-2`)).toMatchObject({ verdict: { passed: false, code: 'ERR_CASSETTE_MISMATCH' } })
    expect(await replayWith('/echo?code=FR&state=CA')).toMatchObject({ verdict: { passed: false, code: 'ERR_CASSETTE_MISMATCH' } })
    // A body naming a member twice is not the body JSON.parse reads of it.
    expect(await replayWith('/echo', { method: 'POST', headers: json, body: '{"a":1,"a":2}' })).toMatchObject({ verdict: { passed: false, code: 'ERR_CASSETTE_MISMATCH' } })
    expect(await replayWith('/echo', { method: 'POST', headers: json, body: '{ "a": 2 }' })).toMatchObject({ status: 200, verdict: { passed: true } })
  })

  it('leaves near misses alone: ordinary ids, digests and counters stay as they were', async () => {
    const upstream = await startLeakyUpstream(fakeSecrets())
    const storm = createStorm({})
    const recorder = createCassetteRecorder(storm, { urlForm: 'origin' })
    const proxy = await startProxy({ targets: [upstream.url], storm, observer: recorder.observer })
    const digest = randomBytes(32).toString('hex')
    const body = JSON.stringify({ idempotency_key: 'order-1729', sha: digest, max_tokens: 100, next_page_token: 'CAE3' })
    await undiciFetch(`${proxy.url}/echo?page=2&sha=${digest}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then((r) => r.text())
    await proxy.close()
    await upstream.close()
    const [exchange] = (await recorder.cassette()).exchanges
    expect(exchange!.request.url).toBe(`/echo?page=2&sha=${digest}`)
    expect(exchange!.request.body!.data).toBe(body)
  })

  it('stores only allow-listed headers when asked, drops excluded ones, and still redacts secret ones', async () => {
    const secrets = fakeSecrets()
    const upstream = await startLeakyUpstream(secrets)
    const headers = { authorization: `Bearer ${secrets.github}`, 'x-tenant': 'acme', 'user-agent': 'agent/1', 'x-trace': 't-1' }
    const recordWith = async (options: { includeHeaders?: string[]; excludeHeaders?: string[] }) => {
      const storm = createStorm({})
      const recorder = createCassetteRecorder(storm, { urlForm: 'origin', ...options })
      const proxy = await startProxy({ targets: [upstream.url], storm, observer: recorder.observer })
      await undiciFetch(`${proxy.url}/echo`, { method: 'POST', headers, body: 'x' }).then((r) => r.text())
      await proxy.close()
      await recorder.close()
      return (await recorder.cassette()).exchanges[0]!
    }
    const allowed = await recordWith({ includeHeaders: ['Authorization', 'x-tenant', 'content-type'] })
    expect(allowed.request.headers).toEqual({ authorization: '[REDACTED]', 'x-tenant': 'acme', 'content-type': 'text/plain;charset=UTF-8' })
    expect(Object.keys(allowed.response!.headers)).toEqual(['content-type'])
    const excluded = await recordWith({ excludeHeaders: ['User-Agent', 'x-trace'] })
    expect(excluded.request.headers).not.toHaveProperty('user-agent')
    expect(excluded.request.headers).not.toHaveProperty('x-trace')
    expect(excluded.request.headers).toMatchObject({ authorization: '[REDACTED]', 'x-tenant': 'acme' })
    await upstream.close()
  })
})
