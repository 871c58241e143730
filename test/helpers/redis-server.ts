/**
 * A real Redis for tests: Debian's `redis-server` on a free loopback port, no persistence.
 * `.ci/run` installs it; in CI a missing binary fails the test rather than skipping it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import net from 'node:net'
import { createClient } from 'redis'
import { runsHere } from './skipped-groups.js'

export const REDIS_SERVER = process.env.TOOLSTORM_REDIS_SERVER ?? '/usr/bin/redis-server'
export const hasRedis = runsHere('the Redis (shared state) tests', existsSync(REDIS_SERVER), `no redis-server at ${REDIS_SERVER}: apt-get install redis-server`)

export interface RedisServer {
  readonly port: number
  readonly url: string
  /** Kill it (SIGKILL: nothing is saved, as after a crash). */
  kill(): Promise<void>
  /** Start it again on the same port, empty. */
  restart(): Promise<void>
  /**
   * Freeze it (SIGSTOP: connections stay open, nothing is answered, as on a frozen host or during a
   * long fork) until the returned `thaw` (SIGCONT), which resolves once it answers again (a second
   * call does nothing).
   */
  freeze(): () => Promise<void>
  close(): Promise<void>
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** Resolves once something listens on `port` on 127.0.0.1 (`what` names it in the error past the deadline). */
export function waitForPort(port: number, deadline: number, what = 'redis-server'): Promise<void> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = net.connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve()
      })
      socket.once('error', () => {
        socket.destroy()
        if (Date.now() > deadline) reject(new Error(`${what} did not listen on ${port} within the deadline`))
        else setTimeout(attempt, 20)
      })
    }
    attempt()
  })
}

function waitForFile(file: string, deadline: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (existsSync(file)) return resolve()
      if (Date.now() > deadline) return reject(new Error(`redis-server did not create ${file} within the deadline`))
      setTimeout(attempt, 20)
    }
    attempt()
  })
}

export interface RedisServerOptions {
  /** Listen on this socket file only (no TCP port); `url` is then `unix://<path>`. */
  unixSocket?: string
  /** Listen with TLS only (PEM files; clients need no certificate); `url` is then `rediss://…`. */
  tls?: { certFile: string; keyFile: string; caFile: string }
  /** Require this password (`requirepass`); `url` carries it. */
  password?: string
}

export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const socket = options.unixSocket
  const port = socket ? 0 : await freePort()
  let child: ChildProcess | null = null
  const launch = async () => {
    const where = socket
      ? ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700']
      : options.tls
        ? ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--tls-cert-file', options.tls.certFile, '--tls-key-file', options.tls.keyFile, '--tls-ca-cert-file', options.tls.caFile, '--tls-auth-clients', 'no']
        : ['--port', String(port), '--bind', '127.0.0.1']
    const auth = options.password ? ['--requirepass', options.password] : []
    child = spawn(REDIS_SERVER, [...where, ...auth, '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    if (socket) await waitForFile(socket, Date.now() + 5000)
    else await waitForPort(port, Date.now() + 5000)
  }
  const kill = async () => {
    const running = child
    child = null
    if (!running || running.exitCode !== null) return
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve())
      running.kill('SIGKILL')
    })
  }
  const freeze = () => {
    const frozen = child
    if (!frozen || frozen.exitCode !== null) throw new Error('redis-server is not running: nothing to freeze')
    frozen.kill('SIGSTOP')
    let thawed: Promise<void> | undefined
    const thaw = async () => {
      frozen.kill('SIGCONT')
      if (frozen.exitCode === null && frozen.signalCode === null) await answers()
    }
    return () => (thawed ??= thaw())
  }
  await launch()
  const credentials = options.password ? `:${encodeURIComponent(options.password)}@` : ''
  const url = socket ? `unix://${credentials}${socket}` : `${options.tls ? 'rediss' : 'redis'}://${credentials}127.0.0.1:${port}`
  /** Resolves once a PING is answered (a TCP url: the only kind `freeze` is used with). */
  const answers = async () => {
    const client = createClient({ url })
    client.on('error', () => undefined)
    await client.connect()
    await client.sendCommand(['PING'])
    await client.close()
  }
  return { port, url, kill, restart: launch, close: kill, freeze }
}
