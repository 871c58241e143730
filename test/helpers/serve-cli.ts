/** Run a serving `toolstorm` command (proxy, record or replay without a command) until a signal, as a user does. */
import { spawn } from 'node:child_process'
import net from 'node:net'
import { BIN } from './cli.js'

export interface ServingCli {
  /** The data plane's URL, from the banner. */
  readonly url: string
  /** Send SIGTERM (as Ctrl-C does SIGINT); resolves with the exit code (a signal name when killed) and stderr. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | string | null; stderr: string; ms: number }>
}

export async function serveCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<ServingCli> {
  const child = spawn(process.execPath, [BIN, ...args, '--port', '0', '--admin-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<number | string | null>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)))
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      const match = /^toolstorm (?:proxy|replay) (\S+) /m.exec(stdout)
      if (match) resolve(match[1] as string)
    })
    void exited.then((code) => reject(new Error(`toolstorm ${args[0]} exited ${code}: ${stderr}`)))
  })
  return {
    url,
    async stop(signal = 'SIGTERM') {
      const started = performance.now()
      child.kill(signal)
      // A process that never exits fails the test by its timeout; this one would hang it.
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      const code = await exited
      clearTimeout(killer)
      return { code, stderr, ms: performance.now() - started }
    },
  }
}

/**
 * Open `CONNECT host:443` and leave: `before-tunnel` half-closes right after the request,
 * `mid-handshake` once the tunnel is open and a partial TLS ClientHello was sent. The socket
 * stays open on the client's side (a client that abandoned it, not one that closed it).
 */
export async function abandonConnect(proxyUrl: string, when: 'before-tunnel' | 'mid-handshake'): Promise<net.Socket> {
  const { hostname, port } = new URL(proxyUrl)
  const socket = net.connect(Number(port), hostname)
  socket.on('error', () => undefined)
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write('CONNECT updates.example.com:443 HTTP/1.1\r\nHost: updates.example.com:443\r\n\r\n')
  if (when === 'before-tunnel') {
    socket.end()
    return socket
  }
  await new Promise((resolve) => socket.once('data', resolve))
  // A TLS handshake record header and the start of a ClientHello: the rest never comes.
  socket.end(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]))
  return socket
}
