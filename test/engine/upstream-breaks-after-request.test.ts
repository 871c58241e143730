/**
 * An upstream that takes the request and then resets (or closes) the connection without answering
 * (#36 item 7): the request may have committed, and a client talking to it directly sees a broken
 * connection, which it may retry. Through toolstorm it sees the same, never a 502 the upstream
 * never sent; the report says the upstream broke off after receiving the request (`executed`,
 * `UPSTREAM_RESET` or `UPSTREAM_CLOSED`). An upstream that cannot be reached at all is still a 502
 * (test/proxy/upstream-unreachable.test.ts).
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { createStorm } from '../../src/create-storm.js'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'
import { createTestCa } from '../helpers/test-ca.js'
import { closing, closingChild } from '../helpers/teardown.js'
import { startResettingServer } from '../helpers/upstream.js'
import { EVERY_TRANSPORT, through } from '../helpers/transports.js'
import { startCli } from '../ui/spawn-cli.js'

const run = promisify(execFile)

/** An upstream that reads each request to its end, then resets (RST) or closes (FIN) its connection without a byte of answer; HTTPS for the `https` transport. */
async function startBreakingUpstream(how: 'reset' | 'close', secure = false): Promise<{ url: string; received: string[]; ca: string | null }> {
  const ca = secure ? await createTestCa() : null
  const upstream = closing(await startResettingServer({ close: how === 'close', ...(ca ? { tls: await ca.issue(['127.0.0.1']) } : {}) }))
  return { url: upstream.url, received: upstream.received, ca: ca?.certPem ?? null }
}

/** What fetch rejected with: its message and its cause's code. */
async function fetchFailure(url: string, init: RequestInit): Promise<{ message: string; cause: string | undefined } | { status: number }> {
  try {
    const response = await fetch(url, init)
    await response.arrayBuffer()
    return { status: response.status }
  } catch (error) {
    return { message: (error as Error).message, cause: ((error as Error).cause as NodeJS.ErrnoException | undefined)?.code }
  }
}

/** What fetch rejects with on a reset: MSW handlers answer one with MSW's network error (docs/in-process.md), as an injected `reset`. */
const RESET_SEEN = {
  intercept: { message: 'fetch failed', cause: 'ECONNRESET' },
  msw: { message: 'Failed to fetch', cause: undefined },
  reverse: { message: 'fetch failed', cause: 'ECONNRESET' },
  forward: { message: 'fetch failed', cause: 'ECONNRESET' },
  https: { message: 'fetch failed', cause: 'ECONNRESET' },
} as const

const OBSERVED: ExchangeObserver = { onUpstreamHead: () => undefined }

for (const transport of EVERY_TRANSPORT) {
  describe(`an upstream that breaks off after receiving the request (${transport})`, () => {
    // The proxy serves an exchange nothing observes on its fast path, and an observed one in the general flow: both relay the break.
    for (const [path, options] of [['fast path', {}], ['observed', { observer: OBSERVED }]] as const) {
      if (path === 'fast path' && (transport === 'intercept' || transport === 'msw')) continue // in-process there is one path
      it(`${path}: a reset reaches the client as the reset fetch gives, and the report says the upstream reset after the request`, async () => {
        const upstream = await startBreakingUpstream('reset', transport === 'https')
        const storm = createStorm({})
        const via = await through(transport, storm, upstream.url, { ...options, ...(upstream.ca ? { upstreamCa: upstream.ca } : {}) })
        const failure = await fetchFailure(`${via.base}/ship`, { method: 'POST', body: '{"order":"o-1"}', ...via.init } as RequestInit)
        expect(failure).toEqual(RESET_SEEN[transport])
        expect(upstream.received).toEqual(['POST /ship {"order":"o-1"}'])
        expect(storm.report().calls[0]).toMatchObject({ route: 'POST /ship', outcome: 'reset', status: null, executed: true, upstreamStatus: null, fault: null, injected: false, error: 'UPSTREAM_RESET' })
      })
    }

    it('a close without an answer is passed on as a reset too (no status the upstream never sent), recorded UPSTREAM_CLOSED', async () => {
      const upstream = await startBreakingUpstream('close', transport === 'https')
      const storm = createStorm({})
      const via = await through(transport, storm, upstream.url, { observer: OBSERVED, ...(upstream.ca ? { upstreamCa: upstream.ca } : {}) })
      const failure = await fetchFailure(`${via.base}/ship`, { method: 'POST', body: '{"order":"o-2"}', ...via.init } as RequestInit)
      expect(failure).toEqual(RESET_SEEN[transport])
      expect(upstream.received).toEqual(['POST /ship {"order":"o-2"}'])
      expect(storm.report().calls[0]).toMatchObject({ outcome: 'reset', status: null, executed: true, injected: false, error: 'UPSTREAM_CLOSED' })
    })
  })
}

it.skipIf(!hasPythonModules('requests'))('toolstorm proxy in forward mode: Python requests through HTTP_PROXY sees the connection reset, as without the proxy', async () => {
  const upstream = await startBreakingUpstream('reset')
  // What requests raised (through a proxy it calls any broken connection a ProxyError), and whether a reset caused it.
  const script = `
import json, sys, requests
try:
    response = requests.post(sys.argv[1] + "/ship", json={"order": "o-3"}, timeout=10)
    print(json.dumps([response.status_code, response.text[:200]]))
except requests.exceptions.ConnectionError as error:
    print(json.dumps(["ConnectionError", "ConnectionResetError" in repr(error)]))
`
  const direct = await run(PYTHON, ['-c', script, upstream.url], { env: { ...process.env, NO_PROXY: '*', no_proxy: '*' } })
  expect(JSON.parse(direct.stdout)).toEqual(['ConnectionError', true])
  const cli = await startCli(['proxy', '--port', '0', '--admin-port', '0', '--ready-json'], 1)
  closingChild(cli.child)
  const ready = JSON.parse(cli.lines[0] as string) as { url: string; adminUrl: string; token: string }
  const proxied = await run(PYTHON, ['-c', script, upstream.url], { env: { ...process.env, HTTP_PROXY: ready.url, http_proxy: ready.url, NO_PROXY: '', no_proxy: '' } })
  expect(JSON.parse(proxied.stdout)).toEqual(['ConnectionError', true])
  const report = (await (await fetch(`${ready.adminUrl}/report`, { headers: { authorization: `Bearer ${ready.token}` } })).json()) as { calls: unknown[] }
  expect(report.calls).toEqual([expect.objectContaining({ route: 'POST /ship', outcome: 'reset', executed: true, error: 'UPSTREAM_RESET' })])
})
