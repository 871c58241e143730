/**
 * Trace context on every exchange (docs/claims.md): the W3C `traceparent` a request carries is
 * kept as the call's `trace` in-process as through the proxy, in the report, the cassette and
 * its HAR export (where any HAR viewer shows it), and survives a HAR import.
 */
import http from 'node:http'
import { describe, expect, it } from 'vitest'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { exportHar } from '../../src/cassette/har/har-export.js'
import { importHar } from '../../src/cassette/har/har-import.js'
import { reportsFromCassette } from '../../src/cassette/format/reports-from-cassette.js'
import { createStorm } from '../../src/engine/storm.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { startUpstream } from '../helpers/upstream.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const SPAN_A = '00f067aa0ba902b7'
const SPAN_B = '53995c3f42cd8ad8'

function httpGet(url: string, headers: Record<string, string>): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => res.resume().on('end', () => resolve(res.statusCode))).on('error', reject)
  })
}

describe('trace context on exchanges', () => {
  it('keeps each request’s traceparent in-process (fetch and node:http), in the cassette, its HAR and back', async () => {
    const upstream = await startUpstream()
    const storm = createStorm({ seed: 1, rules: [] })
    const recorder = createCassetteRecorder(storm)
    const interception = intercept(storm, { filter: (url) => url.origin === upstream.url, observer: recorder.observer })
    try {
      expect((await fetch(`${upstream.url}/items/a`, { headers: { traceparent: `00-${TRACE}-${SPAN_A}-01` } })).status).toBe(200)
      expect(await httpGet(`${upstream.url}/items/b`, { traceparent: `00-${TRACE}-${SPAN_B}-00` })).toBe(200)
      // Not a valid traceparent (all-zero span id; a version-00 value with extra fields): no trace, no error.
      expect((await fetch(`${upstream.url}/items/c`, { headers: { traceparent: `00-${TRACE}-0000000000000000-01` } })).status).toBe(200)
      expect((await fetch(`${upstream.url}/items/d`, { headers: { traceparent: `00-${TRACE}-${SPAN_A}-01-extra` } })).status).toBe(200)
    } finally {
      interception.dispose()
      await upstream.close()
    }
    // The upstream still receives the header: toolstorm reads trace context, it does not consume it.
    expect(upstream.requests[0]?.headers.traceparent).toBe(`00-${TRACE}-${SPAN_A}-01`)
    const expected = [{ traceId: TRACE, parentSpanId: SPAN_A }, { traceId: TRACE, parentSpanId: SPAN_B }, undefined, undefined]
    expect(storm.report().calls.map((call) => call.trace)).toEqual(expected)

    const cassette = await recorder.cassette()
    await recorder.close()
    expect(cassette.exchanges.map((exchange) => exchange.trace)).toEqual(expected)
    expect(reportsFromCassette(cassette)[0]?.calls.map((call) => call.trace)).toEqual(expected)
    const har = exportHar(cassette) as { log: { entries: Array<{ comment?: string }> } }
    expect(har.log.entries.map((entry) => entry.comment)).toEqual([`trace ${TRACE} span ${SPAN_A}`, `trace ${TRACE} span ${SPAN_B}`, undefined, undefined])
    const back = await importHar(JSON.parse(JSON.stringify(har)))
    expect(back.exchanges.map((exchange) => exchange.trace)).toEqual(expected)
  })
})
