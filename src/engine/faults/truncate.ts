import { defineFault } from './fault.js'
import { afterSchema, type AfterRule } from './stream-params.js'
import { hasBody } from '../streams/streamable.js'
import { TruncateTransform } from '../streams/truncate-transform.js'

/**
 * The body breaks off: the client gets the first `after` bytes of the real body, then the
 * connection closes without ending it (the client sees an incomplete body: `TypeError: terminated`
 * in fetch, `aborted` in node:http). Works on any body, SSE included, counted in bytes as they
 * travel (content-encoded bytes when the upstream compressed anyway). A body of at most `after`
 * bytes is relayed whole and does not count as triggered.
 */
export const truncateFault = defineFault<'truncate', AfterRule>({
  type: 'truncate',
  phase: 'on-response',
  needsBody: true,
  params: { after: afterSchema },
  explain: (rule) => `close the connection after ${rule.after} byte(s) of the response body`,
  async apply({ rule, request, response }) {
    if (!response || !hasBody(request, response)) return { action: { type: 'pass' }, injected: false }
    return { action: { type: 'stream', transform: new TruncateTransform(rule.after) }, injected: false }
  },
})
