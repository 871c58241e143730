/**
 * The cassette: recorded HTTP exchanges, stored as JSON Lines. Line 1 is the header; every
 * further line is one exchange, in the order the requests arrived. Loading streams line by
 * line, so no single giant string is ever built. Version 4 is append-only: the header declares no
 * count, and a few other lines (segment-lines.ts) mark restarts, late effects, claims and a clean end.
 *
 * Everything stored went through the redactor first: URLs, headers, bodies, keys and effects.
 * @see docs/cassettes.md
 */
import { z } from 'zod'
import { defaultFaults, ruleSchema } from '../../default-faults.js'
import { seedSchema } from '../../engine/schema/rule-base.js'
import { cutSchema, mcpCallSchema, modelCallSchema } from '../../engine/schema/report.js'
import { callTraceSchema, reportClaimSchema } from '../../engine/schema/claim-schema.js'
import { MAX_USER_NORMALISERS, NORMALISERS, normalisePathSchema, normalisePatternSchema, normaliserSchema } from './normaliser-schemas.js'

export const CASSETTE_KIND = 'toolstorm.cassette'
/**
 * The version written. Version 2 may keep a body in a file beside the cassette (`storedBodyFileSchema`);
 * version 3 may hold the recorded run's claims in the header (`claims`); version 4 is append-only:
 * the header is written once (no `exchanges` count, no `claims`: they are counted and read from
 * the lines that follow, segment-lines.ts), so a recorder writes each exchange once and the file
 * is valid at every moment, and it may hold the user's normalisers (`match.normalizePatterns`,
 * `match.normalizePaths`). Versions 1 (every body inline), 2 and 3 are still read.
 */
export const CASSETTE_VERSION = 4
export const CASSETTE_VERSIONS = [1, 2, 3, 4] as const
/** Claims one cassette may hold, over all its runs (a report holds 10,000 per run). */
export const MAX_CASSETTE_CLAIMS = 100_000
/**
 * Default bound on each stored body (bytes): generous, so a recording is faithful by default.
 * Longer bodies keep a prefix and say so, and their replay breaks off (docs/cassettes.md).
 */
export const DEFAULT_BODY_LIMIT = 16 * 1024 * 1024
/** Largest body bound a cassette may declare. */
export const MAX_BODY_LIMIT = 64 * 1024 * 1024
/** Exchanges one cassette may hold. */
export const MAX_CASSETTE_EXCHANGES = 1_000_000
/** Events one recorded stream keeps apart; what follows the last of them is kept as one more. */
export const MAX_STREAM_EVENTS = 100_000

const seconds = z.number().min(0)
const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/, { error: 'expected a header name (an HTTP token)' })

/** Header values as they were sent (redacted); repeated headers keep every value. */
export const storedHeadersSchema = z.record(headerName, z.union([z.string(), z.array(z.string()).max(1000)]))

const bodyEncoding = z.enum(['utf8', 'base64'], { error: 'expected "utf8" or "base64"' })
/** Bytes of the body as it travelled (still content-encoded), whatever was stored. */
const bodySize = z.int().min(0)
/** Only a prefix of the body is stored (see the header's `bodyLimit`). */
const bodyTruncated = z.boolean()
/** The content-encoding removed before storing, so the body could be redacted. */
const bodyDecoded = z.enum(['gzip', 'deflate', 'br']).optional()

/** A stored body, inline: UTF-8 text as text, anything else as base64. In memory every body is inline. */
export const storedBodySchema = z.strictObject({
  encoding: bodyEncoding,
  data: z.string(),
  size: bodySize,
  truncated: bodyTruncated,
  decoded: bodyDecoded,
})

/** The name of a body file: the SHA-256 of the stored bytes (hex), `.gz` when the file is gzip-compressed. */
export const BODY_FILE_NAME = /^sha256-[0-9a-f]{64}(\.gz)?$/

/**
 * A stored body kept in a file beside the cassette (version 2): `<cassette>.bodies/<file>`,
 * content-addressed and verified on load. Large bodies are kept this way so the JSON Lines stay
 * readable and quick to load.
 */
export const storedBodyFileSchema = z.strictObject({
  /** How the bytes read inline: `utf8` text or `base64`. */
  encoding: bodyEncoding,
  /** The file in the cassette's bodies folder: `sha256-<hex of the stored bytes>`, `.gz` when compressed. */
  file: z.string().regex(BODY_FILE_NAME, { error: 'expected a body file name, sha256-<64 hex digits> with an optional .gz' }),
  /** Bytes stored (in the file, uncompressed). */
  bytes: z.int().min(0),
  size: bodySize,
  truncated: bodyTruncated,
  decoded: bodyDecoded,
})

/** One block of a recorded event stream (an SSE event or comment) as the client received it. */
export const storedStreamEventSchema = z.strictObject({
  /** Seconds from the response head to the moment the client received this block. */
  at: seconds,
  /** Bytes of the stored body this block takes: the blocks cover the body in order, from its first byte. */
  bytes: z.int().min(1),
})

/**
 * A streamed response (`text/event-stream`) as the client received it: the stored body split into
 * its blocks, each redacted on its own, with when each one arrived. Replay plays them back in
 * order, at once or at the recorded pace, then ends the body as the outcome says.
 */
export const storedStreamSchema = z.strictObject({
  events: z.array(storedStreamEventSchema).max(MAX_STREAM_EVENTS + 1),
  /** Seconds from the response head to the end of the body: a clean end, a cut, or the client leaving. */
  end: seconds,
})

export const storedFaultSchema = z.strictObject({
  rule: z.string().min(1),
  kind: z.enum(defaultFaults.kinds),
  phase: z.enum(['before-upstream', 'after-commit', 'on-response']),
  /** Whether the fault really happened (a lost response on an upstream error does not). */
  injected: z.boolean(),
})

/**
 * A message a stdio MCP server sent the client on its own (`toolstorm mcp --record`), kept on the
 * call it belongs to: sent `during` it (before its answer), or `before` it (after the previous call
 * ended). A notification, or a request (sampling, elicitation, roots) with the client's answer.
 */
export const storedServerMessageSchema = z.strictObject({
  when: z.enum(['before', 'during']),
  /** Seconds from the call's start to the moment the wrapper relayed it. */
  at: seconds,
  /** The JSON-RPC notification or request, redacted as bodies are. */
  message: z.json(),
  /** A `notifications/progress` naming this call's `progressToken`: a replay gives it the live call's token. */
  progress: z.literal(true).optional(),
  /**
   * A request's answer from the client, redacted, and when it came (seconds from the call's start).
   * A replay sends the request and waits for the client's answer, which must match this one.
   */
  answer: z.strictObject({ at: seconds, message: z.json() }).optional(),
})

export const storedEffectSchema = z.strictObject({
  name: z.string().min(1),
  key: z.string().min(1),
  /** Seconds since the run started. */
  at: seconds,
  /** Per-run identity of the raw (name, key) pair, in first-seen order. */
  identity: z.int().min(1),
  redacted: z.boolean(),
})

/**
 * The request, responses and exchange of a cassette, over one body schema: in memory every body is
 * inline (`storedBodySchema`); a file line may also point to a body file (`storedBodyFileSchema`).
 */
function exchangeSchemas<Body extends z.ZodType>(body: Body) {
  const request = z.strictObject({
    method: z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$/, { error: 'expected an HTTP method' }),
    /** Origin-form (`/path?query`, the client addressed the proxy) or absolute-form (`http://host/path`). */
    url: z.string().min(1).max(65_536),
    headers: storedHeadersSchema,
    body: body.nullable(),
    /**
     * The request was answered before its body was read (a fault before the upstream), so the
     * body is unknown and replay does not compare it. Present only when true.
     */
    bodyUnknown: z.literal(true).optional(),
  })
  const response = z.strictObject({
    status: z.int().min(100).max(599),
    headers: storedHeadersSchema,
    body: body.nullable(),
  })
  /** What the client received: a stored response, plus its events and their timing when it was an event stream. */
  const clientResponse = response.extend({
    /** Present for an event stream recorded as events (optional: cassettes without it replay the body at once). */
    stream: storedStreamSchema.optional(),
  })
  const exchange = z.strictObject({
    /** Position in the cassette, from 1; requests are replayed in this order. */
    seq: z.int().min(1),
    run: z.string().min(1).max(200),
    /** The call id in its run (null when the call budget refused the request). */
    call: z.int().min(1).nullable(),
    route: z.string().min(1),
    /** Per-route ordinal in the run (null when refused). */
    ordinal: z.int().min(1).nullable(),
    /** The invocation key, redacted (null when refused). */
    key: z.string().min(1).nullable(),
    parent: z.int().min(1).nullable(),
    /** Seconds since the run started. */
    started: seconds,
    elapsed: seconds,
    request,
    /** How the exchange ended for the client. */
    outcome: z.enum(['response', 'reset', 'error', 'cancelled']),
    /** What the client received: null for a reset; for `error`, the head and the bytes before the break. */
    response: clientResponse.nullable(),
    /** The upstream's own answer when the client did not get it unchanged (a lost response, schema drift). */
    upstream: response.nullable(),
    /** Whether the upstream received the request. */
    executed: z.boolean(),
    fault: storedFaultSchema.nullable(),
    /** Seconds the client was told to wait, injected or real. */
    retryAfter: seconds.nullable(),
    /** A stable code for transport failures (`ECONNRESET`, `UPSTREAM_UNREACHABLE`, `UPSTREAM_RESET`, `CLIENT_ABORTED`). */
    error: z.string().nullable(),
    /** Commits the tool side reported for this exchange (evidence; replay never performs them). */
    effects: z.array(storedEffectSchema).max(10_000),
    /** Model-call metadata (provider, model, tokens, streamed) when the request was a model call; never prompts or outputs. */
    model: modelCallSchema.optional(),
    /** The MCP message (method, tool, JSON-RPC id, session, redacted arguments) and the answer the client got, for an MCP call. */
    mcp: mcpCallSchema.optional(),
    /** Where an injected stream fault cut the stream (complete events, body bytes the client received). */
    cut: cutSchema.optional(),
    /** The trace context the request carried (`traceparent`, or MCP's `params._meta.traceparent`): joins claims to it (docs/claims.md). */
    trace: callTraceSchema.optional(),
    /** Over stdio: the server's notifications and requests that came with this call, in order (a replay sends them before its answer). */
    notifications: z.array(storedServerMessageSchema).max(10_000).optional(),
  })
  return { request, response, clientResponse, exchange }
}

const inMemory = exchangeSchemas(storedBodySchema)
export const storedRequestSchema = inMemory.request
export const storedResponseSchema = inMemory.response
export const storedClientResponseSchema = inMemory.clientResponse
/** An exchange as a loaded cassette holds it: every body inline. */
export const cassetteExchangeSchema = inMemory.exchange
/** An exchange line as a file holds it: a body may be in a body file beside the cassette (version 2). */
export const cassetteFileExchangeSchema = exchangeSchemas(z.union([storedBodySchema, storedBodyFileSchema])).exchange

export { MAX_USER_NORMALISERS, NORMALISERS, normalisePathSchema, normalisePatternSchema, normaliserSchema, type Normaliser } from './normaliser-schemas.js'

export const matchOptionsSchema = z.strictObject({
  /** Request headers compared in replay (lowercase names); redacted values compare equal. */
  headers: z.array(z.string().min(1)).max(100).default([]),
  /** Query parameters ignored in replay (volatile values such as timestamps). */
  ignoreQuery: z.array(z.string().min(1)).max(100).default([]),
  /** JSON body fields ignored in replay, at any depth (`request_id`, `timestamp`). */
  ignoreBodyFields: z.array(z.string().min(1)).max(100).default([]),
  /**
   * Normalisers applied to JSON request bodies before they are compared (tool-call and response
   * ids, timestamps, UUIDs in `messages[]`, `input[]` and MCP `tools/call` arguments); chosen at
   * record time. Absent in cassettes written before they existed: none.
   */
  normalize: z.array(normaliserSchema).max(NORMALISERS.length).default([]),
  /**
   * Version 4: the user's own, over the whole JSON body (and the patterns over a text body):
   * regular expressions whose matches, and JSON paths whose values, compare equal. Absent: none.
   */
  normalizePatterns: z.array(normalisePatternSchema).max(MAX_USER_NORMALISERS).default([]),
  normalizePaths: z.array(normalisePathSchema).max(MAX_USER_NORMALISERS).default([]),
})

/** Matching as recorded when nothing was chosen: exact, no normaliser. */
export const defaultMatchOptions = (): MatchOptions => ({ headers: [], ignoreQuery: [], ignoreBodyFields: [], normalize: [], normalizePatterns: [], normalizePaths: [] })

/**
 * A claim of the recorded run, as its report held it when the cassette was written (judged then,
 * never again on replay: it describes the recorded run). `run` names the run it was made in.
 */
export const cassetteClaimSchema = reportClaimSchema.extend({ run: z.string().min(1).max(200) })

export const cassetteHeaderSchema = z.strictObject({
  $schema: z.string().optional(),
  version: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)], { error: 'expected cassette version 1, 2, 3 or 4' }),
  kind: z.literal(CASSETTE_KIND, { error: `expected "${CASSETTE_KIND}"` }),
  toolstorm: z.string(),
  /** When recording started (ISO 8601); exchange timings are relative to their run. */
  recorded: z.iso.datetime({ offset: true }),
  /** How the exchanges were captured. */
  source: z.enum(['proxy', 'in-process', 'har', 'replay-update']),
  /** Reverse-mode targets (redacted), for tools that need absolute URLs (HAR export). */
  targets: z.array(z.string()).max(100),
  /**
   * Versions 1–3: exchange lines that follow (a file with fewer is truncated). Absent in a version 4
   * file, whose exchanges are counted as they load; a loaded cassette always has it.
   */
  exchanges: z.int().min(0).max(MAX_CASSETTE_EXCHANGES).optional(),
  seed: seedSchema,
  clock: z.string(),
  maxCalls: z.int().min(1).nullable(),
  routes: z.record(z.string(), z.string()),
  /** The rules in force (redacted): evidence of which faults were injected. */
  rules: z.array(ruleSchema).max(100),
  bodyLimit: z.int().min(0).max(MAX_BODY_LIMIT),
  match: matchOptionsSchema,
  /** Extra secret names used while recording, and how many literal secrets (never their values). */
  redaction: z.strictObject({ keys: z.array(z.string().min(1)).max(1000), secrets: z.int().min(0) }),
  /**
   * Version 3: the claims the agent reported during the recording, each with its verdict, the calls
   * and effect keys behind it (docs/claims.md), judged when the cassette was written. Absent when
   * there were none (and in older cassettes).
   */
  claims: z.array(cassetteClaimSchema).max(MAX_CASSETTE_CLAIMS).optional(),
})

/**
 * What a recording was made with, kept per segment of a version 4 cassette (the header holds the
 * first segment's; a segment line or a settings line later ones').
 */
export const segmentSettingsSchema = cassetteHeaderSchema.pick({ toolstorm: true, source: true, targets: true, seed: true, clock: true, maxCalls: true, routes: true, rules: true, bodyLimit: true, redaction: true })

/** A loaded cassette's header: `exchanges` is always known (declared, or counted while loading). */
export type CassetteHeader = Omit<z.infer<typeof cassetteHeaderSchema>, 'exchanges'> & { exchanges: number }
export type CassetteFileHeader = z.infer<typeof cassetteHeaderSchema>
export type SegmentSettings = z.infer<typeof segmentSettingsSchema>
export type CassetteExchange = z.infer<typeof cassetteExchangeSchema>
export type CassetteFileExchange = z.infer<typeof cassetteFileExchangeSchema>
export type StoredBody = z.infer<typeof storedBodySchema>
export type StoredBodyFile = z.infer<typeof storedBodyFileSchema>
export type StoredRequest = z.infer<typeof storedRequestSchema>
export type StoredResponse = z.infer<typeof storedResponseSchema>
export type StoredClientResponse = z.infer<typeof storedClientResponseSchema>
export type StoredStream = z.infer<typeof storedStreamSchema>
export type StoredStreamEvent = z.infer<typeof storedStreamEventSchema>
export type StoredEffect = z.infer<typeof storedEffectSchema>
export type StoredServerMessage = z.infer<typeof storedServerMessageSchema>
export type CassetteClaim = z.infer<typeof cassetteClaimSchema>
export type StoredFault = z.infer<typeof storedFaultSchema>
export type MatchOptions = z.infer<typeof matchOptionsSchema>
export type StoredHeaders = z.infer<typeof storedHeadersSchema>
