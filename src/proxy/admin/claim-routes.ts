/**
 * Admin routes that take claims (docs/claims.md):
 *
 * | method | path | what |
 * |---|---|---|
 * | POST | /v1/traces | OTLP/HTTP trace export, `application/x-protobuf` or `application/json` (gzip allowed): tool-call spans become claims |
 * | POST | /claims | one claim `{tool, status, run?, toolCallId?, traceparent?}` from an agent without tracing |
 *
 * Both need the admin token (`OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20<token>`). A
 * malformed export is refused whole (400, or 413 past 8 MiB) with the JSON error body and nothing
 * stored. With a shared state store (`--state`) claims, posted or from spans, and the spans' parent
 * links are kept in the store: every replica's report judges them.
 */
import type http from 'node:http'
import { gunzip } from 'node:zlib'
import { promisify } from 'node:util'
import { z } from 'zod'
import { AdminApiError, ClaimError } from '../../errors.js'
import type { Storm } from '../../engine/storm.js'
import type { RunLedger } from '../../engine/ledger/run-ledger.js'
import { RUN_ID } from '../../engine/run.js'
import { formatIssues } from '../../engine/schema/format-issues.js'
import { CLAIM_STATUSES } from '../../engine/schema/claim-schema.js'
import { ingestClaim, ingestSpans } from '../../claims/ingest-claims.js'
import { decodeOtlpJson } from '../../claims/otlp-json.js'
import { parseTraceparent } from '../../engine/evidence/traceparent.js'
import { docsUrl } from '../../docs-url.js'
import { parseJsonBody, readBody, readBodyBytes, sendError, sendJson } from './admin-server.js'

/** Largest OTLP export body, compressed or not (the Collector's OTLP receiver has no smaller default worth matching; SDK batches are far smaller). */
export const MAX_OTLP_BODY_BYTES = 8 * 1024 * 1024

const gunzipAsync = promisify(gunzip)

const claimBodySchema = z.strictObject({
  tool: z.string({ error: 'expected the tool name (1–200 characters)' }).min(1, { error: 'expected the tool name (1–200 characters)' }).max(200, { error: 'expected the tool name (1–200 characters)' }),
  status: z.enum(CLAIM_STATUSES, { error: 'expected "success" or "failure"' }),
  toolCallId: z.string().min(1).max(200, { error: 'expected the tool call id (1–200 characters)' }).nullable().optional(),
  run: z.string().regex(RUN_ID, { error: 'expected a run id (1-128 letters, digits, ".", "_", "~" or "-")' }).optional(),
  traceparent: z.string().refine((value) => parseTraceparent(value) !== null, { error: 'expected a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)' }).optional(),
})

type Route = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => Promise<boolean>

export function claimRoutes(storm: Storm, ledger: RunLedger = storm.ledger): Route {
  return async (req, res, url) => {
    const route = `${req.method} ${url.pathname}`
    if (route !== 'POST /v1/traces' && route !== 'POST /claims') return false
    try {
      if (route === 'POST /claims') {
        const body = parseJsonBody(await readBody(req, 16 * 1024), 'POST /claims')
        const parsed = claimBodySchema.safeParse(body)
        if (!parsed.success) {
          const lines = formatIssues(parsed.error, body)
          throw new ClaimError('ERR_CLAIM_INVALID', `Failed to record a claim: ${lines[0]}. Send {"tool": "create_shipment", "status": "success" | "failure"}, optionally with "run", "toolCallId" and "traceparent". See ${docsUrl('claims.md')}.`, { details: lines.join('\n') })
        }
        const { tool, status, toolCallId, run, traceparent } = parsed.data
        const trace = parseTraceparent(traceparent)
        const { run: runId, claim } = await ingestClaim(storm, ledger, { tool, status, toolCallId, run, traceId: trace?.traceId, spanId: trace?.parentSpanId })
        sendJson(res, 201, { ok: true, run: runId, claim: { id: claim.id, tool: claim.tool, status: claim.status } })
        return true
      }
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
      const protobuf = type === 'application/x-protobuf' || type === 'application/protobuf'
      if (!protobuf && type !== 'application/json') {
        throw new ClaimError('ERR_OTLP_INVALID', `Failed to read the OTLP trace export: content type "${type.slice(0, 100)}" is neither application/x-protobuf nor application/json. Point an OTLP/HTTP exporter at /v1/traces (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf or http/json). See ${docsUrl('claims.md')}.`)
      }
      const body = await inflated(req)
      // protobufjs is loaded with the first protobuf export: every command's start would pay for it (~35 ms of a wrapper's start under load).
      const otlp = protobuf ? await import('../../claims/otlp-protobuf.js') : null
      const spans = otlp ? otlp.decodeOtlpProtobuf(body) : decodeOtlpJson(parseJsonBody(body.toString('utf8'), 'POST /v1/traces'))
      const result = await ingestSpans(storm, ledger, spans)
      const message = result.rejected > 0 ? `${result.rejected} span(s) refused: their run already holds 10,000 claims` : ''
      if (otlp) {
        const answer = otlp.encodeOtlpProtobufResponse(result.rejected, message)
        res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': answer.byteLength, 'cache-control': 'no-store' })
        res.end(answer)
      } else {
        sendJson(res, 200, result.rejected > 0 ? { partialSuccess: { rejectedSpans: String(result.rejected), errorMessage: message } } : {})
      }
      return true
    } catch (error) {
      sendError(res, error)
      return true
    }
  }
}

/** The request body, gunzipped when the exporter compressed it (OTEL_EXPORTER_OTLP_COMPRESSION=gzip); bounded either way. */
async function inflated(req: http.IncomingMessage): Promise<Buffer> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase()
  if (encoding !== 'identity' && encoding !== 'gzip') {
    throw new ClaimError('ERR_OTLP_INVALID', `Failed to read the OTLP trace export: content encoding "${encoding.slice(0, 50)}" is not supported (send it uncompressed or gzip).`)
  }
  const body = await readBodyBytes(req, MAX_OTLP_BODY_BYTES)
  if (encoding === 'identity') return body
  try {
    return await gunzipAsync(body, { maxOutputLength: MAX_OTLP_BODY_BYTES })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw new AdminApiError('ERR_INPUT_TOO_LARGE', `Failed to read the admin request: the body exceeds ${MAX_OTLP_BODY_BYTES} bytes once decompressed.`)
    throw new ClaimError('ERR_OTLP_INVALID', `Failed to read the OTLP trace export: the gzip body is damaged (${(error as Error).message}).`)
  }
}
