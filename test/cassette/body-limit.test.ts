/**
 * Bodies at the body limit, both ways, recorded then replayed with the upstream gone: through the
 * proxy in reverse and forward mode, and in-process. Byte for byte up to the limit; past it the
 * client sees its read break off and the verdict fails (unless truncation is allowed), and a
 * request body past it matches only by its size and stored prefix. A small limit keeps it quick.
 */
import { createHash, randomBytes } from 'node:crypto'
import { readdir } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { fetch as undiciFetch, ProxyAgent, type Dispatcher } from 'undici'
import { describe, expect } from 'vitest'
import { bodiesFolderFor } from '../../src/cassette/format/body-files.js'
import { createCassetteRecorder, type CassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { exportHar } from '../../src/cassette/har/har-export.js'
import { importHar } from '../../src/cassette/har/har-import.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { replayCassette } from '../../src/cassette/replay/replay-cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import type { ReplayVerdict } from '../../src/cassette/replay/replay-verdict.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { openTransport, type Transport } from '../helpers/transports.js'
import { test as it } from '../helpers/file-fixtures.js'

const LIMIT = 100_000
const SIZES = [0, 1, LIMIT - 1, LIMIT, LIMIT + 1, 3 * 1024 * 1024]
const DATA = randomBytes(3 * 1024 * 1024)
const bytesOf = (size: number) => DATA.subarray(0, size)
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/** What a client made of one exchange: the status and the body's length and digest, or the error. */
type Outcome = { status: number; bytes: number; sha256: string } | { error: string }
type Send = (pathname: string, init?: { method?: string; body?: Uint8Array }) => Promise<Response>

/** Every size both ways: a download of it, an upload of it (the upstream answers with what it got). */
async function traffic(send: Send): Promise<Outcome[]> {
  const outcome = async (pathname: string, init?: { method?: string; body?: Uint8Array }): Promise<Outcome> => {
    try {
      const response = await send(pathname, init)
      const body = Buffer.from(await response.arrayBuffer())
      return { status: response.status, bytes: body.length, sha256: sha256(body) }
    } catch (error) {
      return { error: (error as Error).message }
    }
  }
  const out: Outcome[] = []
  for (const size of SIZES) out.push(await outcome(`/bytes/${size}`))
  for (const size of SIZES) out.push(await outcome('/upload', { method: 'POST', body: bytesOf(size) }))
  return out
}

function startUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const download = /^\/bytes\/(\d+)$/.exec(req.url ?? '')
      if (download) {
        const body = bytesOf(Number(download[1]))
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length })
        return res.end(body)
      }
      const upload = Buffer.concat(chunks)
      const text = JSON.stringify({ bytes: upload.length, sha256: sha256(upload) })
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    })
  })
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () => new Promise<void>((done) => server.close(() => done())),
      }),
    ),
  )
}

const viaUndici = (base: string, dispatcher?: Dispatcher): Send => (pathname, init = {}) =>
  undiciFetch(base + pathname, { ...init, ...(dispatcher ? { dispatcher } : {}) }) as unknown as Promise<Response>
const viaGlobalFetch = (base: string): Send => (pathname, init = {}) => fetch(base + pathname, init as RequestInit)

type Mode = (typeof MODES)[number]
const MODES = ['reverse', 'forward', 'intercept'] as const satisfies readonly Transport[]

interface Recorded {
  file: string
  upstreamUrl: string
  outcomes: Outcome[]
  recorder: CassetteRecorder
}

/** Record the traffic in `mode` into a file in `dir`; the upstream is closed when this returns. */
async function record(dir: string, mode: Mode): Promise<Recorded> {
  const upstream = await startUpstream()
  const file = path.join(dir, `${mode}.cassette.jsonl`)
  const storm = createStorm({})
  // In process: in memory, then saved (the path of recorder.save() and Cassette.save()). Through the
  // proxy: into its file as it goes (appended line by line, with body files written per exchange).
  const recorder = createCassetteRecorder(storm, mode === 'intercept' ? { bodyLimit: LIMIT } : { file, source: 'proxy', bodyLimit: LIMIT, urlForm: mode === 'reverse' ? 'origin' : 'absolute' })
  const opened = await openTransport(mode, storm, upstream.url, { observer: recorder.observer })
  let outcomes: Outcome[]
  try {
    outcomes = await traffic(mode === 'intercept' ? viaGlobalFetch(opened.base) : viaUndici(opened.base, opened.init.dispatcher))
  } finally {
    await opened.close()
  }
  await recorder.close()
  if (mode === 'intercept') await recorder.save(file)
  await upstream.close()
  return { file, upstreamUrl: upstream.url, outcomes, recorder }
}

/** Replay `file` in `mode` (the upstream is gone); the outcomes and the verdict. */
async function replay(mode: Mode, recorded: Recorded, options: { allowTruncated?: boolean } = {}): Promise<{ outcomes: Outcome[]; verdict: ReplayVerdict }> {
  const cassette = await Cassette.load(recorded.file)
  if (mode === 'intercept') {
    const replayed = replayCassette(cassette, options)
    try {
      return { outcomes: await traffic(viaGlobalFetch(recorded.upstreamUrl)), verdict: replayed.verdict() }
    } finally {
      replayed.dispose()
    }
  }
  const server = await startReplayServer(cassette, options)
  const agent = mode === 'forward' ? new ProxyAgent({ uri: server.url, proxyTunnel: false }) : undefined
  try {
    return { outcomes: await traffic(viaUndici(mode === 'reverse' ? server.url : recorded.upstreamUrl, agent)), verdict: await server.close() }
  } finally {
    await agent?.close()
    await server.close()
  }
}

const whole = (size: number): Outcome => ({ status: 200, bytes: size, sha256: sha256(bytesOf(size)) })
const uploaded = (size: number): Outcome => {
  const text = JSON.stringify({ bytes: size, sha256: sha256(bytesOf(size)) })
  return { status: 200, bytes: Buffer.byteLength(text), sha256: sha256(Buffer.from(text)) }
}

describe.each<Mode>(MODES)('bodies at the body limit, %s', (mode) => {
  it('replays bodies up to the limit byte for byte both ways; a response past it breaks off and fails the verdict', { timeout: 120_000 }, async ({ dir }) => {
    const recorded = await record(dir, mode)
    expect(recorded.outcomes).toEqual([...SIZES.map(whole), ...SIZES.map(uploaded)])
    // Past the limit, never silent: the recorder counts the cut bodies per route.
    expect(recorded.recorder.cutBodies).toEqual({
      count: 4,
      routes: [
        { route: `GET /bytes/${LIMIT + 1}`, requests: 0, responses: 1, upstream: 0 },
        { route: `GET /bytes/${3 * 1024 * 1024}`, requests: 0, responses: 1, upstream: 0 },
        { route: 'POST /upload', requests: 2, responses: 0, upstream: 0 },
      ],
      largest: 3 * 1024 * 1024,
      decoded: false,
    })
    // Bodies over 64 KiB are in files beside the cassette, one per distinct stored body: every
    // body here is a prefix of DATA, so LIMIT - 1 and LIMIT bytes (those cut keep LIMIT), both ways.
    expect((await readdir(bodiesFolderFor(recorded.file))).length).toBe(2)

    const { outcomes, verdict } = await replay(mode, recorded)
    expect(outcomes).toEqual([
      ...SIZES.map((size) => (size <= LIMIT ? whole(size) : { error: 'terminated' })),
      // Uploads past the limit match by their size and stored prefix; their answers are whole.
      ...SIZES.map(uploaded),
    ])
    expect(verdict).toMatchObject({ passed: false, code: 'ERR_CASSETTE_TRUNCATED', served: 12, truncated: 2 })
    expect(verdict.rows.map((row) => row.result)).toEqual([
      ...SIZES.map((size) => (size <= LIMIT ? 'ok' : `truncated: ${LIMIT} of ${size} bytes recorded`)),
      ...SIZES.map(() => 'ok'),
    ])

    // Allowed, the verdict passes, and the client still sees the bodies break off.
    const allowed = await replay(mode, recorded, { allowTruncated: true })
    expect(allowed.outcomes).toEqual(outcomes)
    expect(allowed.verdict).toMatchObject({ passed: true, code: null, truncated: 2 })
    expect(allowed.verdict.rows[4]!.result).toBe(`ok (truncated: ${LIMIT} of ${LIMIT + 1} bytes recorded, allowed)`)
  })
})

describe('request bodies past the body limit', () => {
  it('match only when both their size and their stored prefix match', { timeout: 60_000 }, async () => {
    const upstream = await startUpstream()
    const storm = createStorm({})
    const recorder = createCassetteRecorder(storm, { bodyLimit: LIMIT, urlForm: 'origin' })
    const proxy = await startProxy({ targets: [upstream.url], storm, observer: recorder.observer })
    const upload = bytesOf(LIMIT + 10)
    await (await undiciFetch(`${proxy.url}/upload`, { method: 'POST', body: upload })).text()
    await proxy.close()
    await upstream.close()
    await recorder.close()
    const cassette = await recorder.cassette()
    expect(cassette.exchanges[0]!.request.body).toMatchObject({ size: LIMIT + 10, truncated: true })

    const attempt = async (body: Uint8Array) => {
      const server = await startReplayServer(cassette)
      const response = await undiciFetch(`${server.url}/upload`, { method: 'POST', body })
      const text = await response.text()
      const verdict = await server.close()
      return { status: response.status, text, verdict }
    }
    const same = await attempt(Buffer.from(upload))
    expect(same.status).toBe(200)
    expect(same.verdict.passed).toBe(true)

    const longer = await attempt(bytesOf(LIMIT + 11))
    expect(longer.status).toBe(422)
    expect(longer.verdict.rows[0]!.result).toBe(`mismatch: body differs (expected ${LIMIT + 10} bytes, of which the cassette keeps a prefix)`)

    const otherPrefix = Buffer.from(upload)
    otherPrefix[10] = (otherPrefix[10] as number) ^ 0xff
    const differs = await attempt(otherPrefix)
    expect(differs.status).toBe(422)
    expect(differs.verdict.rows[0]!.result).toBe(`mismatch: body differs from byte 10 (recorded ${LIMIT} bytes, seen ${LIMIT})`)
  })
})

describe('HAR and cut bodies', () => {
  it('keeps a cut body cut through HAR export and import, and imports a body another tool left out as cut', { timeout: 60_000 }, async () => {
    const stored = bytesOf(LIMIT)
    const cassette = Cassette.from({ targets: ['http://files.test'] }, [
      {
        seq: 1, run: 'default', call: 1, route: 'GET /big', ordinal: 1, key: '#1', parent: null, started: 0, elapsed: 0.1,
        request: { method: 'GET', url: '/big', headers: {}, body: null },
        outcome: 'response',
        response: { status: 200, headers: { 'content-type': 'application/octet-stream', 'content-length': String(3 * LIMIT) }, body: { encoding: 'base64', data: stored.toString('base64'), size: 3 * LIMIT, truncated: true } },
        upstream: null, executed: true, fault: null, retryAfter: null, error: null, effects: [],
      },
    ])
    const har = exportHar(cassette) as { log: { entries: Array<{ response: { content: { size: number; comment?: string } } }> } }
    // Visible to any HAR viewer, not only in _toolstorm.
    expect(har.log.entries[0]!.response.content).toMatchObject({
      size: 3 * LIMIT,
      comment: `toolstorm: truncated at the body limit: only the first ${LIMIT} bytes of ${3 * LIMIT} are stored; a replay breaks off after them`,
    })
    const back = await importHar(JSON.parse(JSON.stringify(har)))
    expect(back.exchanges[0]!.response!.body).toMatchObject({ size: 3 * LIMIT, truncated: true })

    // A devtools HAR saved without content: the size says there was a body, the text is not there.
    const foreign = {
      log: {
        version: '1.2',
        creator: { name: 'WebInspector', version: '537.36' },
        entries: [
          {
            startedDateTime: '2025-03-01T10:00:00.000Z',
            time: 5,
            request: { method: 'GET', url: 'http://files.test/report.pdf', httpVersion: 'http/1.1', headers: [], queryString: [], cookies: [], headersSize: -1, bodySize: 0 },
            response: { status: 200, statusText: 'OK', httpVersion: 'http/1.1', headers: [{ name: 'content-type', value: 'application/pdf' }], cookies: [], content: { size: 5000, mimeType: 'application/pdf' }, redirectURL: '', headersSize: -1, bodySize: 5000 },
            cache: {},
            timings: { send: 0, wait: 5, receive: 0 },
          },
        ],
      },
    }
    const imported = await importHar(foreign)
    expect(imported.exchanges[0]!.response!.body).toEqual({ encoding: 'utf8', data: '', size: 5000, truncated: true })
    const server = await startReplayServer(imported)
    const agent = new ProxyAgent({ uri: server.url, proxyTunnel: false })
    try {
      const response = await undiciFetch('http://files.test/report.pdf', { dispatcher: agent })
      expect(response.status).toBe(200)
      await expect(response.arrayBuffer()).rejects.toThrow('terminated')
    } finally {
      await agent.close()
    }
    expect(await server.close()).toMatchObject({ passed: false, code: 'ERR_CASSETTE_TRUNCATED', truncated: 1 })
  })
})
