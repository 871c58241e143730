/**
 * The `--state` URL: where proxy replicas share a run's state. `redis://HOST:PORT[/DB]`,
 * `rediss://…` (TLS) or `unix:///path/to/redis.sock[?db=N]`.
 *
 * @example
 * parseStateUrl('redis://:secret@redis:6379/2') // { shown: 'redis://***@redis:6379/2', … }
 */
import { ConfigError } from '../errors.js'

export interface StateUrl {
  /** The URL as messages may show it: the password (and user) replaced by `***`. */
  readonly shown: string
  /** node-redis client options that reach it. */
  readonly client: { url?: string; socket?: { path: string }; database?: number; username?: string; password?: string }
  /** `rediss://`: the connection is TLS. */
  readonly tls: boolean
}

const EXPECTED = 'expected redis://HOST:PORT[/DB], rediss://HOST:PORT[/DB] or unix:///path/to/redis.sock[?db=N]'
/** The unix socket form node-redis reads: unix://[user[:password]@]/path/to/sock[?db=N]. */
const UNIX = /^unix:\/\/(?:([^:@/]*)(?::([^@/]*))?@)?(\/[^?#]*)(?:\?([^#]*))?$/

/** Parse and check a `--state` value; a `ConfigError` (ERR_USAGE) names what was wrong. */
export function parseStateUrl(text: string, flag = '--state'): StateUrl {
  // As typed (URL.href would add a slash the user never wrote), the password masked.
  const shown = mask(text)
  if (/^(redis\+)?unix:/.test(text)) {
    const unix = UNIX.exec(text)
    if (text.startsWith('redis+unix:')) throw new ConfigError(`Failed to read ${flag}: "${shown}": write a unix socket as unix:///path/to/redis.sock[?db=N] (the form node-redis reads).`, { code: 'ERR_USAGE' })
    if (!unix || unix[3] === '/') throw new ConfigError(`Failed to read ${flag}: "${shown}" names no socket path; ${EXPECTED}.`, { code: 'ERR_USAGE' })
    const [, user, password, socketPath, query] = unix
    const db = new URLSearchParams(query ?? '').get('db')
    // Given as options, not as the URL: node-redis 6.3 parses a unix URL, but its connection
    // handshake reads the URL again as a WHATWG URL, which a unix URL with a password is not.
    return {
      shown,
      client: {
        socket: { path: decodeURIComponent(socketPath as string) },
        ...(db !== null ? { database: database(db, shown, flag) } : {}),
        ...(user ? { username: decodeURIComponent(user) } : {}),
        ...(password ? { password: decodeURIComponent(password) } : {}),
      },
      tls: false,
    }
  }
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new ConfigError(`Failed to read ${flag}: "${shown}" is not a URL; ${EXPECTED}.`, { code: 'ERR_USAGE' })
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new ConfigError(`Failed to read ${flag}: "${shown}" uses ${url.protocol.replace(/:$/, '')}; ${EXPECTED}.`, { code: 'ERR_USAGE' })
  }
  if (!url.hostname) throw new ConfigError(`Failed to read ${flag}: "${shown}" names no host; ${EXPECTED}.`, { code: 'ERR_USAGE' })
  if (url.pathname.length > 1) database(url.pathname.slice(1), shown, flag)
  return { shown, client: { url: url.href }, tls: url.protocol === 'rediss:' }
}

function database(text: string, shown: string, flag: string): number {
  if (!/^\d{1,5}$/.test(text)) throw new ConfigError(`Failed to read ${flag}: the database "${text}" in "${shown}" is not a number; ${EXPECTED}.`, { code: 'ERR_USAGE' })
  return Number(text)
}

/** The URL without its user and password. */
function mask(text: string): string {
  return text.replace(/\/\/[^@/]*@/, '//***@')
}
