/**
 * The lab with no sockets: the agent's `fetch` goes straight into the engine's front door
 * (`serve`, with the storm's plug-ins) over an in-memory transport whose upstream is the shipping logic, all on one
 * virtual clock. It needs nothing from Node beyond what the engine needs, so the browser lab
 * bundles it (see web/lab) and its verdicts are the CLI's.
 *
 * @example
 * const comparison = await runComparison(DEFAULT_DEMO_CONFIG, memoryTransport)
 */
import { VirtualClock } from '../engine/clock.js'
import { createServe } from '../engine/serve.js'
import type { ExchangeTransport, UpstreamResponse } from '../engine/exchange-transport.js'
import { createStorm } from '../create-storm.js'
import type { Storm } from '../engine/storm.js'
import { toWebResponse } from '../interceptors/web-response.js'
import { runAgentOnStorm, type DemoTransport } from './run-demo.js'
import { ROUTES, scenarioRules } from './scenarios.js'
import { createShippingLogic, type ShippingLogic } from './shipping-logic.js'

/** What the agent's fetch sees when the engine resets the connection: what a browser's fetch throws. */
function connectionReset(): TypeError {
  return Object.assign(new TypeError('Failed to fetch'), { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) })
}

async function readChunks(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of body) {
    chunks.push(chunk)
    size += chunk.length
  }
  const out = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

async function* once(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  yield bytes
}

interface MemoryRequest {
  readonly method: string
  readonly url: URL
  /** Lowercase names. */
  readonly headers: Record<string, string>
  readonly body: string
}

/** One exchange's transport: the upstream is `logic`, the client is the promise `response`. */
function memoryExchange(logic: ShippingLogic, request: MemoryRequest): { transport: ExchangeTransport; response: Promise<Response> } {
  let resolve!: (response: Response) => void
  let reject!: (error: unknown) => void
  const response = new Promise<Response>((res, rej) => {
    resolve = res
    reject = rej
  })
  // A rejection nobody awaits yet must not be reported as unhandled: fetch() awaits it later.
  response.catch(() => undefined)
  const transport: ExchangeTransport = {
    signal: new AbortController().signal,
    async forward(options): Promise<UpstreamResponse> {
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(request.headers)) if (!options.removeHeaders.includes(name)) headers[name] = value
      Object.assign(headers, options.setHeaders)
      if (request.body) options.onRequestBody?.(new TextEncoder().encode(request.body))
      options.onRequestBody?.(null)
      const answer = await logic.handle({ method: request.method, path: request.url.pathname + request.url.search, headers, body: request.body })
      const bytes = new TextEncoder().encode(JSON.stringify(answer.body))
      return { status: answer.status, headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) }, body: once(bytes) }
    },
    async respond({ status, headers, body }) {
      resolve(toWebResponse(status, headers, body as Uint8Array<ArrayBuffer> | null))
    },
    async relay(upstream) {
      resolve(toWebResponse(upstream.status, upstream.headers, (await readChunks(upstream.body)) as Uint8Array<ArrayBuffer>))
    },
    reset() {
      reject(connectionReset())
    },
  }
  return { transport, response }
}

/** A `fetch` whose every request is one exchange of `storm`, answered by `logic`. */
export function createMemoryFetch(storm: Storm, logic: ShippingLogic): (url: string, init?: RequestInit) => Promise<Response> {
  const serve = createServe(storm)
  return async (url, init = {}) => {
    const headers: Record<string, string> = {}
    new Headers(init.headers).forEach((value, name) => (headers[name] = value))
    const request: MemoryRequest = { method: (init.method ?? 'GET').toUpperCase(), url: new URL(url), headers, body: typeof init.body === 'string' ? init.body : '' }
    const bytes = new TextEncoder().encode(request.body)
    let response: Promise<Response> | undefined
    // Let the flow record the exchange's end before the agent moves on (and spends time).
    await serve(
      { method: request.method, url: request.url, headers, hasBody: bytes.byteLength > 0 },
      {
        readBody: async (limit) => ({ bytes: bytes.byteLength <= limit ? bytes : null }),
        open(_exchange) {
          const made = memoryExchange(logic, request)
          response = made.response
          return made.transport
        },
      },
    )
    return response as Promise<Response>
  }
}

/** The demo over the in-memory transport: one fresh storm, service and clock per run. */
export const memoryTransport: DemoTransport = {
  async run(config, policy) {
    const clock = new VirtualClock()
    const storm = createStorm({ seed: config.seed, routes: ROUTES, rules: scenarioRules(config.scenario, config.probability), maxCalls: config.maxCalls }, { clock })
    const logic = createShippingLogic({
      sleep: (seconds) => clock.sleep(seconds),
      effect: async (name, key, call) => {
        storm.effect(name, key, { call: call ?? null })
      },
    })
    const { outcome, elapsed } = await runAgentOnStorm(storm, clock, config, policy, createMemoryFetch(storm, logic))
    return { outcome, report: storm.report(), shipments: logic.shipments.length, elapsed }
  },
}
