/**
 * The `--state` flags: proxy replicas share runs through Redis (docs/scale-out.md).
 */
import type { Argv } from 'yargs'
import { ConfigError } from '../errors.js'
import { DEFAULT_STATE_PREFIX, DEFAULT_STATE_TTL_SECONDS, type RedisStateOptions } from '../state/state-options.js'
import { parseStateUrl } from '../state/state-url.js'
import type { StateUnavailablePolicy } from '../proxy/begin-in-ledger.js'
import { bytesOption, numberOption } from './numeric-options.js'
import { readCaFile } from '../proxy/tls/upstream-tls.js'

export interface StateArgs {
  state?: string
  'state-ca'?: string
  'state-prefix': string
  'state-ttl': number
  'state-run-bytes'?: number
  'state-unavailable': StateUnavailablePolicy
}

const PREFIX = /^[A-Za-z0-9_.:-]{1,64}$/

/** `--state`, `--state-prefix` and `--state-ttl` (the report command reads a store with these). */
export function stateLocationOptions<T>(yargs: Argv<T>): Argv<T & Omit<StateArgs, 'state-unavailable'>> {
  return yargs
    .option('state', { type: 'string', describe: 'Share runs with other replicas through Redis: redis://HOST:PORT[/DB], rediss://… or unix:///path.sock' })
    .option('state-ca', { type: 'string', describe: 'rediss:// only: also trust this CA (PEM file) for Redis\'s certificate' })
    .option('state-prefix', { type: 'string', default: DEFAULT_STATE_PREFIX, describe: 'Prefix of every Redis key (suites sharing one Redis use different ones)' })
    .option('state-ttl', { ...numberOption('state-ttl', { min: 1, max: 365 * 24 * 3600 }), default: DEFAULT_STATE_TTL_SECONDS, describe: "Seconds a run's keys live in Redis after its last call" })
    .option('state-run-bytes', { ...bytesOption('state-run-bytes', 64 * 1024), describe: "Recording with --state: bytes of cassette lines one run may hold in Redis (default 256MiB); past it lines are counted and left out (docs/scale-out.md#what-redis-holds)" }) as unknown as Argv<T & Omit<StateArgs, 'state-unavailable'>>
}

/** The location flags plus what an exchange gets while Redis is unreachable (the proxy's). */
export function stateOptions<T>(yargs: Argv<T>): Argv<T & StateArgs> {
  return stateLocationOptions(yargs).option('state-unavailable', {
    choices: ['fail', 'pass'] as const,
    default: 'fail' as const,
    describe: 'While Redis is unreachable: fail (503 ERR_STATE_UNAVAILABLE) or pass requests through untouched',
  }) as unknown as Argv<T & StateArgs>
}

/** The store options from the flags (null without --state); bad values are usage errors. */
export function stateFromArgs(args: Omit<StateArgs, 'state-unavailable'> & { 'state-unavailable'?: StateUnavailablePolicy }, rules: RedisStateOptions['rules']): (RedisStateOptions & { unavailable?: StateUnavailablePolicy }) | null {
  if (args.state === undefined) {
    if (args['state-prefix'] !== DEFAULT_STATE_PREFIX) throw new ConfigError('Failed to read --state-prefix: it needs --state (the Redis the runs are shared through).', { code: 'ERR_USAGE' })
    if (args['state-ca'] !== undefined) throw new ConfigError('Failed to read --state-ca: it needs --state rediss://… (the Redis the runs are shared through, over TLS).', { code: 'ERR_USAGE' })
    return null
  }
  const where = parseStateUrl(args.state)
  const caFile = args['state-ca']
  if (caFile !== undefined && !where.tls) throw new ConfigError(`Failed to read --state-ca: ${where.shown} is not a rediss:// URL (TLS); the CA is for Redis over TLS only.`, { code: 'ERR_USAGE' })
  if (!PREFIX.test(args['state-prefix'])) throw new ConfigError(`Failed to read --state-prefix: "${args['state-prefix']}" must be 1-64 letters, digits, or _ . : -`, { code: 'ERR_USAGE' })
  return {
    url: args.state,
    prefix: args['state-prefix'],
    ttlSeconds: args['state-ttl'],
    ...(args['state-run-bytes'] !== undefined ? { maxRunBytes: args['state-run-bytes'] } : {}),
    ...(caFile !== undefined ? { ca: readCaFile(caFile, '--state-ca') } : {}),
    ...(rules ? { rules } : {}),
    ...(args['state-unavailable'] ? { unavailable: args['state-unavailable'] } : {}),
  }
}
