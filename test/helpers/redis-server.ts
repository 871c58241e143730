/**
 * A real Redis for tests: Debian's `redis-server` on a free loopback port, no persistence.
 * `.ci/run` installs it; in CI a missing binary fails the test rather than skipping it.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import net from 'node:net'

export const REDIS_SERVER = '/usr/bin/redis-server'
export const hasRedis = existsSync(REDIS_SERVER) || Boolean(process.env.CI)

export interface RedisServer {
  readonly port: number
  readonly url: string
  /** Kill it (SIGKILL: nothing is saved, as after a crash). */
  kill(): Promise<void>
  /** Start it again on the same port, empty. */
  restart(): Promise<void>
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

function waitForPort(port: number, deadline: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = net.connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve()
      })
      socket.once('error', () => {
        socket.destroy()
        if (Date.now() > deadline) reject(new Error(`redis-server did not listen on ${port} within the deadline`))
        else setTimeout(attempt, 20)
      })
    }
    attempt()
  })
}

export async function startRedis(): Promise<RedisServer> {
  const port = await freePort()
  let child: ChildProcess | null = null
  const launch = async () => {
    child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
    await waitForPort(port, Date.now() + 5000)
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
  await launch()
  return { port, url: `redis://127.0.0.1:${port}`, kill, restart: launch, close: kill }
}
