/**
 * MCP over stdio (`toolstorm mcp -- <server command>`): a stdio MCP server of its own that runs the
 * real one as its child and relays newline-delimited JSON-RPC both ways. Each request the client
 * sends is one exchange through the engine's front door (`serve()`, engine/serve.ts), the same as
 * an HTTP request through the proxy: the MCP plug-in names it (`tools/call write_file`), the rules
 * pick their calls by the same ordinals and seed, and its answer is read for the report, recorded
 * and replayed. The source is the server (`child-source.ts`), or a cassette in front of it; the
 * sink is the wrapper's stdout (`stdio-transport.ts`).
 *
 * Everything else passes untouched and in order: notifications both ways, the server's requests to
 * the client (sampling, elicitation, roots) and the client's answers to them, lines that are not
 * JSON-RPC (counted when the server wrote them). The wrapper writes nothing of its own to stdout.
 *
 * @example
 * const server = startStdioServer({ storm, input: process.stdin, output: process.stdout, command: ['npx', '-y', '@modelcontextprotocol/server-memory'] })
 * server.listen()
 * const end = await server.ended // the client left, or the server exited
 */
import type { Readable, Writable } from 'node:stream'
import { createServe, type ServeEntry } from '../engine/serve.js'
import type { ExchangeObserver } from '../engine/exchange-flow.js'
import type { Exchange } from '../engine/exchange.js'
import type { Storm } from '../engine/storm.js'
import type { UpstreamSource } from '../engine/upstream-source.js'
import { guardObserver, printExchangeFailure } from '../proxy/exchange-failure.js'
import type { JsonRpcId } from '../mcp/mcp-request.js'
import type { JsonValue } from '../json/canonical-json.js'
import { noteParsedBody } from '../mcp/parse-mcp-request.js'
import { AnswerWaiters } from '../mcp/answer-waiters.js'
import { ChildServer, describeExit, type ChildExit } from './child-server.js'
import { childSource } from './child-source.js'
import { answerLine, readStdioLine, type StdioMessage } from './json-rpc-line.js'
import { LineSplitter } from './line-splitter.js'
import { RequestCancel } from './request-cancel.js'
import { ServerMessageTracker } from './server-messages.js'
import type { SpawnedServer } from './spawn-server.js'
import { stdioHeaders, STDIO_URL, stdioTransport, type LostAnswer, type StdioLink } from './stdio-transport.js'

export interface StdioServerOptions {
  readonly storm: Storm
  /** Where the client's messages come from (the wrapper's stdin). */
  readonly input: Readable
  /** Where its answers go (the wrapper's stdout). */
  readonly output: Writable
  /** The real server's command and arguments; absent: none runs (a replay answers every call). */
  readonly command?: readonly string[] | undefined
  /** The server's environment (default: the wrapper's). */
  readonly env?: NodeJS.ProcessEnv | undefined
  /** The server, already launched with `command` and `env` (spawn-server.ts): taken over instead of launched. */
  readonly spawned?: SpawnedServer | undefined
  /** Where answers come from first (a cassette); the server answers what it passes on. Default: the server. */
  readonly source?: UpstreamSource | undefined
  /** The user's observer (a cassette recorder). */
  readonly observer?: ExchangeObserver | undefined
  /** What a lost answer does (default `close`: the connection ends as a crashed server's). */
  readonly lostAnswer?: LostAnswer | undefined
  /**
   * This connection's number in its run (default 1; a continued run's later launches count on):
   * the report's `mcp.session` of its calls is `stdio-<launch>`.
   */
  readonly launch?: number | undefined
  /** Diagnostics (default: stderr). */
  readonly warn?: ((message: string) => void) | undefined
}

/** Why the connection ended. */
export type StdioEndReason =
  /** The client closed stdin (and the server exited after it). */
  | 'client-closed'
  /** The server exited by itself. */
  | 'server-exited'
  /** A fault ended the connection as a crashed server's (`response_lost`, `crash`). */
  | 'fault'
  /** The server could not be started. */
  | 'not-started'
  /** The wrapper was told to stop (SIGINT, SIGTERM). */
  | 'stopped'

export interface StdioEnd {
  readonly reason: StdioEndReason
  /** How the server process ended (null when none ran). */
  readonly exit: ChildExit | null
  /** `not-started`: why. */
  readonly error?: NodeJS.ErrnoException
}

export interface StdioStats {
  /** Requests from the client, each one exchange. */
  requests: number
  /** Lines the server wrote that are not JSON-RPC messages (relayed all the same). */
  serverNonJson: number
}

export interface StdioServer {
  readonly child: ChildServer | null
  readonly stats: Readonly<StdioStats>
  /** Resolves once the connection ended and every exchange finished. */
  readonly ended: Promise<StdioEnd>
  /** Start reading the client's messages (the server is started already: its pid is known). */
  listen(): void
  /** Stop: `signal` goes on to the server (a second stop kills it). */
  stop(signal: NodeJS.Signals): void
}

/** How long the server gets to exit once the client closed its stdin, before SIGTERM (then as long again before SIGKILL), as the SDK clients do. */
const EXIT_GRACE_MS = 2_000
/** How long exchanges still running get to finish when the connection ended. */
const SETTLE_MS = 2_000
/** How long cancelled exchanges get to record their end. */
const ABORTED_MS = 200
const NEWLINE = Buffer.from('\n')

export function startStdioServer(options: StdioServerOptions): StdioServer {
  const { storm, input, output } = options
  const warn = options.warn ?? ((message: string) => process.stderr.write(`[toolstorm] ${message}\n`))
  const stats: StdioStats = { requests: 0, serverNonJson: 0 }
  let ending: StdioEndReason | null = null
  let endError: NodeJS.ErrnoException | undefined
  let resolveEnded!: (end: StdioEnd) => void
  const ended = new Promise<StdioEnd>((resolve) => (resolveEnded = resolve))
  /** Exchanges running, and the controllers that cancel them by the client's request id. */
  const running = new Set<Promise<void>>()
  const cancels = new Map<JsonRpcId, RequestCancel>()

  // The server's notifications, told to a recorder (with the call each belongs to) when one listens.
  const tracker = new ServerMessageTracker()

  const write = (line: Uint8Array) => {
    if (output.writable) output.write(Buffer.concat([line, NEWLINE]))
  }

  const child = options.command?.length
    ? new ChildServer({
        command: options.command,
        env: options.env ?? process.env,
        onLine(line, message) {
          if (message.kind === 'other') {
            if (stats.serverNonJson++ === 0) warn(`the MCP server wrote a line that is not a JSON-RPC message to stdout; it is relayed to the client (servers log to stderr). Further ones are counted.`)
          } else if (tracker.wanted) {
            if (message.kind === 'notification') tracker.notification(line, message.message)
            else if (message.kind === 'request') tracker.request(line, message.id)
          }
          write(line)
        },
        onExit: () => finish('server-exited'),
        onSpawnError(error) {
          endError = error
          ending = 'not-started'
          finish('not-started')
        },
      })
    : null

  // The client's answers a replay waits for (to the server requests it sent in the recorded server's place).
  const awaited = new AnswerWaiters<JsonValue>()

  const live: UpstreamSource = child ? childSource(child) : noServer()
  const source = options.source ?? live
  const link: StdioLink = {
    write,
    lostAnswer: options.lostAnswer ?? 'close',
    child,
    expectAnswer: (id, signal) => awaited.expect(id, signal),
    crash(exchange: Exchange) {
      if (ending) return
      ending = 'fault'
      warn(`${exchange.record?.route ?? 'a call'}: the answer is lost (rule "${exchange.rule?.name ?? '?'}", ${exchange.fault?.type ?? 'reset'}): the connection ends as a crashed server's.`)
      if (child) child.kill('SIGKILL')
      else finish('fault')
    },
  }
  const report = (error: Parameters<typeof printExchangeFailure>[0]) => printExchangeFailure(error)
  const headers = stdioHeaders(options.launch ?? 1)
  // The storm's plug-ins, as every transport's.
  const serve = createServe<ServeEntry>(storm, { observer: options.observer, guard: (observer) => guardObserver(observer, report) })

  const serveRequest = (line: Buffer, id: JsonRpcId, message: Record<string, unknown>) => {
    stats.requests++
    // The MCP plug-in names the request from this parse instead of its own.
    noteParsedBody(line, message)
    const cancel = new RequestCancel()
    cancels.set(id, cancel)
    const request = { id, line, message, cancel }
    let tracked: string | null = null
    const entry: ServeEntry = {
      readBody: (limit) => Promise.resolve({ bytes: line.length <= limit ? line : null }),
      open: (exchange) => {
        if (tracker.wanted) tracker.began((tracked = exchange.id), message)
        return stdioTransport(exchange, request, link, source, live)
      },
    }
    const done = () => {
      if (tracked !== null) tracker.ended(tracked)
      running.delete(served!)
      if (cancels.get(id) === cancel) cancels.delete(id)
    }
    const failed = (error: unknown) => {
      // A bug or a throwing hook: this call fails as the proxy fails an exchange; the connection goes on.
      warn(`Failed to serve a request (id ${JSON.stringify(id)}): ${(error as Error)?.message ?? String(error)}`)
      write(answerLine(id, 500, null).line)
      done()
    }
    let served: Promise<void> | undefined
    try {
      const serving = serve({ method: 'POST', url: STDIO_URL, headers, hasBody: true }, entry)
      // One promise per call (not three): `serve` resolves once the exchange ended.
      if (serving) served = serving.then(done, failed)
      else return done()
    } catch (error) {
      return failed(error)
    }
    running.add(served)
  }

  const fromClient = (line: Buffer) => {
    if (ending) return
    const message: StdioMessage = readStdioLine(line)
    child?.noteHandshake(message)
    if (message.kind === 'request') return serveRequest(line, message.id, message.message)
    if (message.kind === 'response' && message.id !== null) {
      // The answer to a request a replay sent goes back to it, not to the server; another is recorded with the server's request.
      if (awaited.arrived(message.id, message.message as JsonValue)) return
      if (tracker.wanted) tracker.answer(line, message.id)
    }
    if (message.kind === 'notification' && message.method === 'notifications/cancelled') {
      // The client gave up on a request: its exchange ends as cancelled (a fault's wait stops).
      const params = message.message.params as { requestId?: unknown } | undefined
      const requestId = params?.requestId
      if (typeof requestId === 'string' || typeof requestId === 'number') cancels.get(requestId)?.abort(Object.assign(new Error('The client cancelled the request'), { code: 'CLIENT_ABORTED' }))
    }
    child?.write(line)
  }

  /** The connection is over (the server exited, or none runs): the end is the first reason given. */
  let finishing = false
  const finish = (reason: StdioEndReason) => {
    if (finishing) return
    finishing = true
    ending ??= reason
    input.pause()
    void (async () => {
      // Exchanges end by themselves first (a server that exited failed what it owed, as MCP_SERVER_EXITED);
      // what still waits then (a fault's delay, a silently lost answer) ends as cancelled.
      await settle([...running], SETTLE_MS)
      for (const cancel of cancels.values()) cancel.abort(Object.assign(new Error('The connection ended'), { code: 'CLIENT_ABORTED' }))
      await settle([...running], ABORTED_MS)
      resolveEnded({ reason: ending!, exit: child?.exit ?? null, ...(endError ? { error: endError } : {}) })
    })()
  }

  /** The client closed the connection: the server's stdin is closed too, then it is stopped as the SDK clients stop theirs. */
  const clientClosed = () => {
    if (ending) return
    ending = 'client-closed'
    if (!child) return finish('client-closed')
    child.endInput()
    escalate(child)
  }

  child?.start(options.spawned)
  let listening = false

  return {
    child,
    stats,
    ended,
    listen() {
      if (listening) return
      listening = true
      const splitter = new LineSplitter(fromClient)
      input.on('data', (chunk: Buffer) => splitter.push(chunk))
      input.on('end', () => {
        splitter.end()
        clientClosed()
      })
      input.on('error', clientClosed)
      // The client stopped reading (EPIPE): no answer can reach it any more.
      output.on('error', clientClosed)
    },
    stop(signal) {
      if (!child) {
        ending ??= 'stopped'
        return finish('stopped')
      }
      if (ending === 'stopped') return child.kill('SIGKILL')
      ending ??= 'stopped'
      child.kill(signal)
    },
  }
}

/** SIGTERM after the grace, SIGKILL after another, unless the server exited by then. */
function escalate(child: ChildServer): void {
  const term = setTimeout(() => child.kill('SIGTERM'), EXIT_GRACE_MS)
  const kill = setTimeout(() => child.kill('SIGKILL'), 2 * EXIT_GRACE_MS)
  void child.waitExit().then(() => {
    clearTimeout(term)
    clearTimeout(kill)
  })
}

/** Wait for `promises`, at most `ms`. */
async function settle(promises: Promise<void>[], ms: number): Promise<void> {
  if (promises.length === 0) return
  let timer: NodeJS.Timeout | undefined
  await Promise.race([Promise.allSettled(promises), new Promise((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}

/** The source behind a replay that runs no server: a call the cassette passes on cannot be answered. */
function noServer(): UpstreamSource {
  return {
    kind: 'stdio',
    routesItself: true,
    begin: () => ({
      forward: () => Promise.reject(Object.assign(new Error('no MCP server runs behind this replay (give its command after --)'), { code: 'MCP_SERVER_ABSENT' })),
      upstreamFailed: () => 'the MCP server (none runs: give its command after --)',
    }),
  }
}

export { describeExit }
