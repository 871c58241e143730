/**
 * The Redis connection as the shared store's parts use it (docs/scale-out.md#key-layout): a run's
 * keys under one hash tag, one command at a time within a deadline of our own (counted: the round
 * trips the benchmark and the tests report), and the Lua scripts by SHA.
 */
import { createHash } from 'node:crypto'
import tls from 'node:tls'
import { createClient, ErrorReply } from 'redis'
import { StateUnavailableError } from '../errors.js'
import type { StateUrl } from './state-url.js'

/** A command that waits longer than this counts as the store being unavailable. */
const COMMAND_TIMEOUT_MS = 2000

/** What a command that missed its deadline reports (no code: the message is the reason). */
class NoAnswerError extends Error {}

export type Client = ReturnType<typeof newClient>

export function newClient(where: StateUrl, ca?: string) {
  let connected = false
  const client = createClient({
    ...where.client,
    // Fail fast while disconnected: an exchange is answered 503 (or passed) rather than held.
    disableOfflineQueue: true,
    commandOptions: { timeout: COMMAND_TIMEOUT_MS },
    socket: {
      ...(where.client.socket ?? {}),
      // `ca` replaces the default roots instead of adding to them, so they are listed again.
      ...(ca !== undefined ? { tls: true as const, ca: [...tls.rootCertificates, ca] } : {}),
      connectTimeout: COMMAND_TIMEOUT_MS,
      // Give up at start (exit 2); once connected, keep reconnecting: traffic resumes when Redis returns.
      reconnectStrategy: (retries: number, cause: Error) => (connected ? Math.min(50 * 2 ** retries, 1000) : cause),
    },
  })
  client.on('ready', () => {
    connected = true
  })
  // node-redis emits every socket error; the exchanges that needed Redis report it themselves.
  client.on('error', () => undefined)
  return client
}

export function unavailable(where: StateUrl, error: unknown, when: string): StateUnavailableError {
  const reason = reasonOf(error)
  return new StateUnavailableError(`Failed to reach the state store ${where.shown} ${when}: ${reason}. Start Redis there, or fix --state.`, { cause: error })
}

/** A socket error's code (ECONNREFUSED), looked for through node-redis's wrappers; else the message. */
function reasonOf(error: unknown): string {
  let current = error as { code?: unknown; cause?: unknown; originalError?: unknown; socketError?: unknown } | undefined
  for (let depth = 0; depth < 4 && current; depth++) {
    if (typeof current.code === 'string') return current.code
    current = (current.socketError ?? current.originalError ?? current.cause) as typeof current
  }
  return (error as Error)?.message ?? String(error)
}

/** Run ids travel inside exchange ids, so an effect posted to any replica finds its run. */
export function encodeRun(run: string): string {
  return Buffer.from(run, 'utf8').toString('base64url')
}

export function runOfExchange(id: string): string | null {
  const dot = id.lastIndexOf('.')
  if (dot < 0) return null
  return Buffer.from(id.slice(dot + 1), 'base64url').toString('utf8') || null
}

/** The keys of one run: one hash tag, so one Redis Cluster slot. */
export interface RunKeys {
  readonly state: string
  readonly keys: string
  readonly exchanges: string
  readonly calls: string
  readonly effects: string
  readonly cassette: string
  readonly running: string
  readonly claims: string
  /** OTLP spans' parent links, and the spans counted (`#received`, `#ignored`, `#claims`): redis-claims.ts. */
  readonly spans: string
  /** `token_limit` windows (redis-token-quota.ts). */
  readonly quota: string
  /** The run's own rules (`PUT /rules?run=`): a hash of `token` and `config`, kept across resets as in one process. */
  readonly rules: string
}

export class RedisStore {
  /** Round trips to Redis so far (measured by the benchmark and the tests). */
  roundTrips = 0
  readonly #shas = new Map<string, string>()
  /**
   * A command missed its deadline and Redis has not answered since (connected but silent: paused,
   * a frozen host): commands fail at once meanwhile, and one PING at a time asks whether it is back.
   */
  #silent = false
  #probing = false

  constructor(
    readonly client: Client,
    readonly where: StateUrl,
    readonly prefix: string,
    /** How long a run's keys live after its last call, as Redis takes it. */
    readonly ttlMs: string,
  ) {}

  runKeys(run: string): RunKeys {
    const tag = `{${this.prefix}:${run}}`
    return { state: `${tag}:s`, keys: `${tag}:k`, exchanges: `${tag}:x`, calls: `${tag}:calls`, effects: `${tag}:effects`, cassette: `${tag}:cassette`, running: `${tag}:r`, claims: `${tag}:claims`, spans: `${tag}:spans`, quota: `${tag}:q`, rules: `${tag}:rules` }
  }

  /** The index of runs (a sorted set by start). */
  get runsKey(): string {
    return `${this.prefix}:runs`
  }

  /** EVALSHA, loading the script on first use and again after Redis restarted (NOSCRIPT). */
  async eval(script: string, keys: string[], args: string[], onLate?: (reply: unknown) => void): Promise<unknown> {
    let sha = this.#shas.get(script)
    if (sha === undefined) {
      sha = createHash('sha1').update(script).digest('hex')
      this.#shas.set(script, sha)
    }
    const command = ['EVALSHA', sha, String(keys.length), ...keys, ...args]
    try {
      return await this.command(() => this.client.sendCommand(command), onLate ? { onLate } : {})
    } catch (error) {
      if (!(error instanceof ErrorReply) || !error.message.startsWith('NOSCRIPT')) throw error
      return this.command(() => this.client.sendCommand(['EVAL', script, String(keys.length), ...keys, ...args]), onLate ? { onLate } : {})
    }
  }

  /**
   * One round trip, within a deadline of our own: node-redis drops a command's `timeout` once the
   * command is written, so a connected Redis that stops answering would hold it for ever. Past the
   * deadline the store counts as unavailable until it answers again (`onLate` gets a reply that
   * comes anyway). Any failure but a Redis error reply means the store is unavailable.
   */
  async command<T>(send: () => Promise<T>, options: { deadlineMs?: number; onLate?: (value: T) => void } = {}): Promise<T> {
    this.roundTrips++
    if (this.#silent) {
      this.#probe()
      throw unavailable(this.where, new NoAnswerError(`no answer within ${COMMAND_TIMEOUT_MS / 1000} s`), 'during traffic')
    }
    const deadlineMs = options.deadlineMs ?? COMMAND_TIMEOUT_MS
    const sent = send()
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new NoAnswerError(`no answer within ${deadlineMs / 1000} s`)), deadlineMs)
      timer.unref()
    })
    try {
      return await Promise.race([sent, deadline])
    } catch (error) {
      if (error instanceof NoAnswerError) {
        this.#silent = true
        sent.then(
          (value) => {
            this.#silent = false
            options.onLate?.(value)
          },
          () => undefined,
        )
      } else if (error instanceof ErrorReply && !/^(LOADING|BUSY|MASTERDOWN|READONLY)/.test(error.message)) throw error
      throw unavailable(this.where, error, 'during traffic')
    } finally {
      clearTimeout(timer)
    }
  }

  /** While the store is silent: one PING at a time; its answer (or a broken connection, which fails fast) ends the silence. */
  #probe(): void {
    if (this.#probing) return
    this.#probing = true
    void this.client.ping().then(
      () => undefined,
      () => undefined,
    ).finally(() => {
      this.#probing = false
      this.#silent = false
    })
  }
}
