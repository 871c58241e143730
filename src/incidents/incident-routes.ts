/**
 * The flight recorder on the admin API (`--incidents DIR`):
 *
 * | method | path | what |
 * |---|---|---|
 * | GET | /incidents | `{"dir", "incidents": [index lines], "evicted", "tooLarge", "openRuns", "bufferedBytes", "decided", "kept", "droppedExchanges"}` |
 * | POST | /incidents?run=ID | `{"reason"?}`: keep the run (a person or an alert saw something): when it ends, or now if it just ended. `{"run", "state": "pending" \| "kept" \| "already", "incident"}`; 404 when its exchanges are no longer held |
 * | POST | /runs/end?run=ID | the run has ended (a test's teardown, a job's end): decided now. `{"run", "incident"}` (null when it was not kept) |
 */
import type http from 'node:http'
import { ConfigError } from '../errors.js'
import { RUN_ID } from '../engine/run.js'
import { parseJsonBody, readBody, sendError, sendJson } from '../proxy/admin/admin-server.js'
import type { FlightRecorder } from './flight-recorder.js'

type Route = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => Promise<boolean>

function runOf(url: URL, route: string): string {
  const run = url.searchParams.get('run')
  if (run === null || !RUN_ID.test(run)) throw new ConfigError(`Failed to use ${route}: name the run, as in ${route}?run=<id> (1-128 letters, digits, ".", "_", "~" or "-").`, { code: 'ERR_USAGE' })
  return run
}

export function incidentRoutes(flight: FlightRecorder): Route {
  return async (req, res, url) => {
    const route = `${req.method} ${url.pathname}`
    if (route !== 'GET /incidents' && route !== 'POST /incidents' && route !== 'POST /runs/end') return false
    try {
      if (route === 'GET /incidents') {
        const { store, counts } = flight
        sendJson(res, 200, { dir: store.dir, incidents: store.incidents, evicted: store.evicted, tooLarge: store.tooLarge, openRuns: flight.openRuns, bufferedBytes: flight.bufferedBytes, ...counts })
      } else if (route === 'POST /incidents') {
        const run = runOf(url, 'POST /incidents')
        const text = await readBody(req)
        const body = text.trim() === '' ? {} : parseJsonBody(text, 'POST /incidents')
        const reason = body !== null && typeof body === 'object' && typeof (body as { reason?: unknown }).reason === 'string' ? ((body as { reason: string }).reason.slice(0, 500) || 'marked') : 'marked through the admin API'
        const { state, entry } = await flight.mark(run, reason)
        sendJson(res, state === 'pending' ? 202 : 200, { run, state, incident: entry })
      } else {
        const run = runOf(url, 'POST /runs/end')
        sendJson(res, 200, { run, incident: await flight.end(run) })
      }
    } catch (error) {
      sendError(res, error)
    }
    return true
  }
}
