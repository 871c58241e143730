/**
 * closePair's grace period ends the wait for connections that would otherwise never close, also
 * when nothing else keeps the process alive (issue #14, item 6: a CLI that awaited close() exited
 * 13, "unsettled top-level await", without its verdict).
 */
import { spawn } from 'node:child_process'
import net from 'node:net'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../helpers/cli.js'

// A data plane whose one connection is half-open (the client sent FIN, so its socket no longer
// reads and keeps no handle active), closed by closePair at the top level of a module.
const SCRIPT = `
import net from 'node:net'
import { closePair } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/proxy/server-pair.js')).href)}
const sockets = new Set()
const paired = (server) => Object.assign(server, {
  closeIdleConnections() {},
  closeAllConnections() { for (const socket of sockets) socket.destroy() },
})
const server = paired(net.createServer({ allowHalfOpen: true }, (socket) => {
  sockets.add(socket)
  socket.on('close', () => sockets.delete(socket))
  socket.on('end', async () => {
    await closePair(server, admin, null)
    console.log('closed')
  })
}))
const admin = paired(net.createServer())
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
await new Promise((resolve) => admin.listen(0, '127.0.0.1', resolve))
console.log(server.address().port)
`

describe('closePair', () => {
  it('closes a half-open connection after the grace and settles, with nothing else keeping the process alive', async () => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', SCRIPT], { stdio: ['ignore', 'pipe', 'inherit'] })
    let stdout = ''
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    const port = await new Promise<number>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString()
        const match = /^(\d+)\n/.exec(stdout)
        if (match) resolve(Number(match[1]))
      }),
    )
    const client = net.connect(port, '127.0.0.1', () => client.end())
    client.on('error', () => undefined)
    const code = await exited
    client.destroy()
    expect(stdout).toContain('closed')
    expect(code).toBe(0)
  })
})
