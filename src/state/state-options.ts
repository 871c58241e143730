/**
 * Options of the shared state store, apart from its implementation: the CLI and the proxy read
 * them without loading the Redis client, which is imported only when `--state` is used.
 */

export const DEFAULT_STATE_PREFIX = 'toolstorm'
/** A run's keys expire this long after its last call (every call renews them). */
export const DEFAULT_STATE_TTL_SECONDS = 24 * 60 * 60

/** Bytes of cassette lines one run may hold in Redis by default (each body is bounded by --body-limit too; `--state-run-bytes`). */
export const MAX_SHARED_CASSETTE_BYTES = 256 * 1024 * 1024

export interface RedisStateOptions {
  /** `redis://HOST:PORT[/DB]`, `rediss://…` or `unix:///path/to/redis.sock[?db=N]`. */
  url: string
  /**
   * `rediss://` only: CA certificates (PEM) to trust for Redis's certificate, besides the system
   * roots (a Redis with its own CA). `--state-ca FILE`.
   */
  ca?: string
  /** Namespace of every key, so several suites can share one Redis. Default `toolstorm`. */
  prefix?: string
  /** Seconds a run's keys live after its last call. Default one day. */
  ttlSeconds?: number
  /** Bytes of recorded cassette lines one run may hold in Redis; past it lines are counted and left out. Default 256 MiB. */
  maxRunBytes?: number
  /**
   * `publish`: this replica's rules replace the shared ones at start (the last replica started
   * wins). `adopt`: take the shared rules when there are some, and publish nothing. Default `publish`.
   */
  rules?: 'publish' | 'adopt'
  /** Follow other replicas' rule changes (pub/sub and polling). Default true; a one-shot reader says false. */
  follow?: boolean
  /** Called when another replica's rules were applied here (for a console line). */
  onRulesApplied?: (version: number) => void
}

