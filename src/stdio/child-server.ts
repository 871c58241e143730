/**
 * The real MCP server `toolstorm mcp` runs as its child: started with the wrapper's environment
 * plus where to report effects (`TOOLSTORM_SIDECAR`, `TOOLSTORM_ADMIN_TOKEN`), its stdin and
 * stdout piped through the wrapper, its stderr passed straight through. Answers the wrapper waits
 * for (one per request it forwarded) are taken by id; every other line it writes is handed on.
 *
 * A restart (`session_expired` over stdio) replaces the process behind the same connection: the
 * new one is initialized with the client's own `initialize` request and `notifications/initialized`
 * (the client does not know it restarted), so it answers the next calls, with its state lost.
 */
import type { ChildProcess } from 'node:child_process'
import { spawnServer, type SpawnedServer } from './spawn-server.js'
import { SESSION_NOT_FOUND } from '../mcp/faults/session-expired.js'
import { rpcErrorAnswer } from '../mcp/json-rpc-answer.js'
import type { JsonRpcId } from '../mcp/mcp-request.js'
import { readStdioLine, responseIdOf, type StdioMessage } from './json-rpc-line.js'
import { RequestCancel } from './request-cancel.js'
import { LineSplitter } from './line-splitter.js'

export interface ChildExit {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface ChildServerOptions {
  /** The server's command and arguments. */
  readonly command: readonly string[]
  readonly env: NodeJS.ProcessEnv
  /** A line the server wrote that no forwarded request waits for (a notification, a request to the client, a stray line). */
  onLine(line: Buffer, message: StdioMessage): void
  /** The server ended by itself (not a restart). */
  onExit(exit: ChildExit): void
  /** It could not be started (a missing command: ENOENT). */
  onSpawnError(error: NodeJS.ErrnoException): void
}

/** How long a server that was asked to stop (SIGTERM) gets before it is killed. */
const STOP_GRACE_MS = 2_000
/** How long a restarted server gets to answer the replayed `initialize`. */
const INITIALIZE_TIMEOUT_MS = 10_000

const NEWLINE = Buffer.from('\n')

interface Waiter {
  resolve(line: Buffer): void
  reject(error: Error): void
}

/** The server is gone: what an answer it owed rejects with (`code` is what the report's call records). */
export class ServerExitedError extends Error {
  readonly code = 'MCP_SERVER_EXITED'
}

export class ChildServer {
  readonly command: readonly string[]
  readonly #options: ChildServerOptions
  #process: ChildProcess | null = null
  /** Forwarded requests waiting for their answer, by JSON-RPC id. */
  readonly #waiting = new Map<JsonRpcId, Waiter>()
  /** Processes whose end is the wrapper's doing (a restart): not reported as the server's exit. */
  readonly #replaced = new WeakSet<ChildProcess>()
  /** The client's `initialize` request and `notifications/initialized`, for a restart. */
  #initialize: Record<string, unknown> | null = null
  #initialized: Buffer | null = null
  #exit: ChildExit | null = null
  #exited: Promise<ChildExit> | null = null
  /** Times the server was restarted. */
  restarts = 0

  constructor(options: ChildServerOptions) {
    this.command = options.command
    this.#options = options
  }

  get pid(): number | null {
    return this.#process?.pid ?? null
  }

  /** How the server ended, once it did. */
  get exit(): ChildExit | null {
    return this.#exit
  }

  /** Start the server, or take over `spawned`, launched earlier with this command. */
  start(spawned: SpawnedServer = spawnServer(this.command, this.#options.env)): void {
    const child = spawned.process
    this.#process = child
    const lines = new LineSplitter((line) => this.#fromServer(line))
    child.stdout!.on('data', (chunk: Buffer) => lines.push(chunk))
    child.stdout!.on('end', () => lines.end())
    let failed = false
    const onError = (error: NodeJS.ErrnoException) => {
      failed = true
      this.#options.onSpawnError(error)
    }
    // `close`: the process ended and its stdout is read to the end (every answer it wrote was seen).
    const onClose = (exit: ChildExit) => {
      if (failed || this.#replaced.has(child)) return
      this.#exit = exit
      this.#failWaiting(new ServerExitedError(`The MCP server exited (${describeExit(exit)}) before it answered.`))
      this.#options.onExit(exit)
    }
    this.#exited = new Promise((resolve) => {
      if (spawned.closed) return resolve(spawned.closed)
      child.once('close', (code, signal) => resolve({ code, signal }))
    })
    // What happened before the take-over is reported now, in order.
    if (spawned.error) queueMicrotask(() => onError(spawned.error!))
    else child.once('error', (error: NodeJS.ErrnoException) => child.pid === undefined && onError(error))
    void this.#exited.then(onClose)
  }

  /** Write one message line to the server. */
  write(line: Uint8Array): void {
    const stdin = this.#process?.stdin
    if (!stdin || stdin.destroyed) return
    stdin.write(Buffer.concat([line, NEWLINE]))
  }

  /** Note the client's handshake messages as they pass, for a restart. */
  noteHandshake(message: StdioMessage): void {
    // A copy: the message itself gets the call id in its _meta when it is forwarded.
    if (message.kind === 'request' && message.method === 'initialize') this.#initialize = structuredClone(message.message)
    else if (message.kind === 'notification' && message.method === 'notifications/initialized') this.#initialized = Buffer.from(JSON.stringify(message.message))
  }

  /**
   * The answer to request `id`, once the server writes it. Rejects when the server exits first,
   * or when `cancel` aborts (the client cancelled: a later answer is relayed as any other line).
   */
  answer(id: JsonRpcId, cancel: RequestCancel): Promise<Buffer> {
    if (this.#exit) return Promise.reject(new ServerExitedError(`The MCP server had exited (${describeExit(this.#exit)}).`))
    if (cancel.aborted) return Promise.reject(cancel.reason!)
    return new Promise((resolve, reject) => {
      const stop = cancel.onAbort((reason) => {
        if (this.#waiting.get(id) === waiter) this.#waiting.delete(id)
        reject(reason)
      })
      const waiter: Waiter = {
        resolve: (line) => {
          stop()
          resolve(line)
        },
        reject: (error) => {
          stop()
          reject(error)
        },
      }
      this.#waiting.set(id, waiter)
    })
  }

  /** End the server's stdin (the client closed the connection): a stdio server exits on it. */
  endInput(): void {
    this.#process?.stdin?.end()
  }

  /** Send `signal` to the server, if it still runs. */
  kill(signal: NodeJS.Signals): void {
    const child = this.#process
    if (child && child.exitCode === null && child.signalCode === null) child.kill(signal)
  }

  /** Resolves once the server process ended (at once when it never started). */
  waitExit(): Promise<ChildExit> {
    return this.#exited ?? Promise.resolve({ code: null, signal: null })
  }

  /**
   * Stop the server and start it again behind the same connection. Requests it still owed an
   * answer get the JSON-RPC error a server that lost the session sends.
   */
  async restart(): Promise<void> {
    const old = this.#process
    if (old) {
      this.#replaced.add(old)
      const exited = this.waitExit()
      this.kill('SIGTERM')
      const timer = setTimeout(() => this.kill('SIGKILL'), STOP_GRACE_MS)
      await exited
      clearTimeout(timer)
    }
    for (const [id, waiter] of this.#waiting) waiter.resolve(Buffer.from(rpcErrorAnswer(id, SESSION_NOT_FOUND.code, SESSION_NOT_FOUND.message).body))
    this.#waiting.clear()
    this.restarts++
    this.start()
    if (!this.#initialize) return
    // The client's own handshake, under an id of the wrapper's: its answer is not relayed.
    const id = `toolstorm-restart-${this.restarts}`
    const cancel = new RequestCancel()
    const timer = setTimeout(() => cancel.abort(new Error('the restarted MCP server did not answer initialize')), INITIALIZE_TIMEOUT_MS)
    const answered = this.answer(id, cancel)
    this.write(Buffer.from(JSON.stringify({ ...this.#initialize, id })))
    try {
      await answered
    } finally {
      clearTimeout(timer)
    }
    if (this.#initialized) this.write(this.#initialized)
  }

  #fromServer(line: Buffer): void {
    // An answer a request waits for is found by its id alone; other lines are parsed to be relayed.
    const id = responseIdOf(line)
    if (id !== undefined) {
      const waiter = this.#waiting.get(id)
      if (waiter) {
        this.#waiting.delete(id)
        return waiter.resolve(line)
      }
    }
    const message = readStdioLine(line)
    if (message.kind === 'response' && message.id !== null) {
      const waiter = this.#waiting.get(message.id)
      if (waiter) {
        this.#waiting.delete(message.id)
        return waiter.resolve(line)
      }
    }
    this.#options.onLine(line, message)
  }

  #failWaiting(error: Error): void {
    const waiting = [...this.#waiting.values()]
    this.#waiting.clear()
    for (const waiter of waiting) waiter.reject(error)
  }
}

/** `exit code 1`, `signal SIGKILL`. */
export function describeExit(exit: ChildExit): string {
  return exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code ?? 'unknown'}`
}
