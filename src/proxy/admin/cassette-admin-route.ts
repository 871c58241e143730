/**
 * `GET /cassette?run=ID` on the admin API while the proxy records: the cassette of one run so far
 * (JSON Lines, already redacted, every body inline so the one file is complete), for the
 * dashboard's export button and for scripts. `x-toolstorm-cut-bodies` counts the bodies cut at the
 * body limit (each is marked `truncated` in its line), so the export says so too.
 *
 * `DELETE /cassette?run=ID`: the recording forgets that run (a recorder in memory only: 409
 * otherwise), so a program that takes each run's cassette as it ends keeps memory flat.
 */
import type http from 'node:http'
import { ConfigError } from '../../errors.js'
import { sendError, sendJson } from './admin-server.js'
import type { CassetteRecorder } from '../../cassette/record/cassette-recorder.js'
import { cutBodiesOf } from '../../cassette/format/cut-bodies.js'

/** How many bodies of the exported cassette were cut at the body limit. */
export const CUT_BODIES_HEADER = 'x-toolstorm-cut-bodies'

export function cassetteAdminRoute(recorder: CassetteRecorder): (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => Promise<boolean> {
  return async (req, res, url) => {
    if (url.pathname !== '/cassette' || (req.method !== 'GET' && req.method !== 'DELETE')) return false
    try {
      if (req.method === 'DELETE') {
        const run = url.searchParams.get('run')
        if (run === null) throw new ConfigError('Failed to forget a recording: name the run, as in DELETE /cassette?run=<id>.', { code: 'ERR_USAGE' })
        sendJson(res, 200, { ok: true, run, exchanges: await recorder.forget(run) })
        return true
      }
      const run = url.searchParams.get('run')
      const cassette = run === null ? await recorder.cassette() : await recorder.cassetteOfRun(run)
      const text = cassette.toString()
      res.writeHead(200, { [CUT_BODIES_HEADER]: String(cutBodiesOf(cassette.exchanges).count), 'content-type': 'application/x-ndjson; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store', 'content-disposition': `attachment; filename="toolstorm-cassette${run ? `-${run.replace(/[^\w.-]/g, '_')}` : ''}.jsonl"` })
      res.end(text)
    } catch (error) {
      sendError(res, error)
    }
    return true
  }
}
