/**
 * In-process replay: this process's `fetch` and `node:http` requests are answered from a
 * cassette, with no network, on the same interception layer as `intercept()`
 * (`@mswjs/interceptors`). A recorded reset rejects `fetch` exactly as a real one does
 * (`TypeError: fetch failed`, cause `ECONNRESET`); a mismatch is answered `409` with a JSON error
 * that names it, and the verdict fails.
 *
 * @example
 * const replay = replayCassette(await Cassette.load('incident.cassette.jsonl'))
 * await agent.run()
 * replay.dispose()
 * replay.assertDone() // throws CassetteMismatchError / CassetteUnusedError with the table
 *
 * @note Use it instead of `intercept()`, not with it: both patch the same globals.
 */
import http from 'node:http'
import { BatchInterceptor, getRawRequest } from '@mswjs/interceptors'
import { ClientRequestInterceptor } from '@mswjs/interceptors/ClientRequest'
import { FetchInterceptor } from '@mswjs/interceptors/fetch'
import { errorBody } from '../error-body.js'
import type { CassetteExchange } from '../engine/schema/cassette.js'
import { NULL_BODY_STATUSES, toWebHeaders } from '../engine/web-response.js'
import { createConnectionResetError, createFetchResetError, createFetchTerminatedError } from '../interceptors/network-error.js'
import type { Cassette } from './cassette.js'
import { replayReport, type ReplayReport } from './replay-report.js'
import { replayedResponse } from './replay-response.js'
import { ReplaySession, type ReplayDecision, type ReplayOptions, type ReplayVerdict } from './replay-session.js'
import { pacer, replayPlan, type ReplaySpeed } from './replay-stream.js'

export interface CassetteReplayOptions extends Omit<ReplayOptions, 'passthroughUnmatched'> {
  /** Which requests the cassette answers; the rest reach the network untouched. Default: all. */
  filter?: (url: URL, method: string) => boolean
  /** Requests that match nothing reach the network instead of failing (`passthrough-unmatched`). */
  passthroughUnmatched?: boolean
}

export type CassetteReplayState = 'active' | 'disposed'

export interface CassetteReplay {
  readonly session: ReplaySession
  readonly readyState: CassetteReplayState
  verdict(): ReplayVerdict
  report(): ReplayReport
  /** Throw the typed error of a failed verdict (its `details` hold the table of expected vs seen). */
  assertDone(): void
  dispose(): void
  [Symbol.dispose](): void
}

/** The web Response (or network error) a decision stands for; `null` means "let it through". */
export async function answerFor(decision: ReplayDecision, request: Request, speed: ReplaySpeed = 'instant'): Promise<Response | Error | null> {
  const fromNodeHttp = getRawRequest(request) instanceof http.ClientRequest
  const resetError = () => (fromNodeHttp ? createConnectionResetError() : createFetchResetError())
  if (decision.type === 'passthrough') return null
  if (decision.type === 'refuse') {
    return Response.json(errorBody('cassette_mismatch', decision.error.code, decision.error.message), { status: 409 })
  }
  const exchange: CassetteExchange = decision.exchange
  const stored = exchange.response
  if (exchange.outcome === 'reset' || (exchange.outcome === 'error' && !stored)) return resetError()
  if (exchange.outcome === 'cancelled' && !stored) {
    // The client gave up waiting when this was recorded: leave it waiting again.
    await untilAborted(request.signal)
    return resetError()
  }
  const streamed = stored!.stream !== undefined
  const replayed = replayedResponse(stored!, { complete: exchange.outcome === 'response' && !streamed, method: request.method })
  const status = Math.max(200, replayed.status)
  if (NULL_BODY_STATUSES.has(status) || request.method === 'HEAD') return new Response(null, { status, headers: toWebHeaders(replayed.headers) })
  if (exchange.outcome === 'response' && !streamed) return new Response(replayed.body, { status, headers: toWebHeaders(replayed.headers) })
  // The bytes the client had (event by event for a stream, at once or at the recorded pace), then
  // what happened next: a clean end, the same break, or a wait until the client gives up.
  const plan = replayPlan(exchange, stored!, replayed.body, speed)
  const headers = { ...replayed.headers }
  if (plan.streamed) delete headers['content-length']
  const gone = new AbortController()
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      const due = pacer()
      const signal = AbortSignal.any([gone.signal, request.signal])
      try {
        for (const piece of plan.pieces) {
          await due(piece.at, signal)
          if (signal.aborted) break
          controller.enqueue(new Uint8Array(piece.bytes))
        }
        if (plan.ending !== 'hold') await due(plan.end, signal)
        if (gone.signal.aborted) return
        if (request.signal.aborted) return controller.error(request.signal.reason)
        switch (plan.ending) {
          case 'end':
            return controller.close()
          case 'cut':
            return controller.error(createFetchTerminatedError())
          case 'reset':
            return controller.error(createFetchTerminatedError(createConnectionResetError()))
          case 'hold':
            await untilAborted(signal)
            if (!gone.signal.aborted) controller.error(request.signal.reason)
        }
      } catch {
        // The client cancelled the body.
      }
    },
    cancel() {
      gone.abort()
    },
  })
  return new Response(body, { status, headers: toWebHeaders(headers) })
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })))
}

/** Answer this process's HTTP requests from `cassette` until disposed. */
export function replayCassette(cassette: Cassette, options: CassetteReplayOptions = {}): CassetteReplay {
  const session = new ReplaySession(cassette, options)
  const interceptor = new BatchInterceptor({ name: 'toolstorm-replay', interceptors: [new ClientRequestInterceptor(), new FetchInterceptor()] })
  let state: CassetteReplayState = 'active'
  interceptor.on('request', async ({ request, controller }) => {
    if (state !== 'active') return
    if (options.filter && !options.filter(new URL(request.url), request.method)) return
    const ticket = session.begin()
    const body = request.body ? Buffer.from(await request.clone().arrayBuffer()) : null
    const headers: Record<string, string> = {}
    request.headers.forEach((value, name) => {
      headers[name] = value
    })
    const decision = await session.decide(ticket, { method: request.method, url: request.url, headers, body })
    const answer = await answerFor(decision, request, session.speed)
    if (answer === null) return
    if (answer instanceof Error) await controller.errorWith(answer)
    else await controller.respondWith(answer)
  })
  interceptor.apply()
  const dispose = () => {
    if (state === 'disposed') return
    state = 'disposed'
    interceptor.dispose()
  }
  return {
    session,
    get readyState() {
      return state
    },
    verdict: () => session.verdict(),
    report: () => replayReport(session, 'in-process'),
    assertDone: () => session.assertDone(),
    dispose,
    [Symbol.dispose]: dispose,
  }
}
