/**
 * `GET /cassette?run=ID` on the admin API while the proxy records: the cassette of one run so far
 * (JSON Lines, already redacted, every body inline so the one file is complete), for the
 * dashboard's export button and for scripts. `x-toolstorm-cut-bodies` counts the bodies cut at the
 * body limit (each is marked `truncated` in its line), so the export says so too.
 */
import type http from 'node:http'
import { sendError } from '../../proxy/admin/admin-server.js'
import type { CassetteRecorder } from './cassette-recorder.js'
import { cutBodiesOf } from '../format/cut-bodies.js'

/** How many bodies of the exported cassette were cut at the body limit. */
export const CUT_BODIES_HEADER = 'x-toolstorm-cut-bodies'

export function cassetteAdminRoute(recorder: CassetteRecorder): (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => Promise<boolean> {
  return async (req, res, url) => {
    if (req.method !== 'GET' || url.pathname !== '/cassette') return false
    try {
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
