/**
 * `toolstorm record` without a command stops on SIGINT as `toolstorm proxy` does (one `runProxy`):
 * while it closes and writes the cassette, a second Ctrl-C is not the default one that kills the
 * process and loses what was recorded.
 */
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import http from 'node:http'
import net from 'node:net'
import path from 'node:path'
import { expect, it } from 'vitest'
import { BIN } from '../helpers/cli.js'
import { closingChild, closingServer, temporaryFolder } from '../helpers/teardown.js'

/** Whether a connection to `port` on loopback is refused: the proxy stopped listening, so it is closing. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(true))
  })
}

it('writes its cassette and exits 0 when a second SIGINT arrives while it closes', async () => {
  const dir = await temporaryFolder('toolstorm-record-stop-')
  const file = path.join(dir, 'stop.cassette.jsonl')
  // `/held` is answered only when the test ends: the proxy's close waits for it (its grace).
  let seenHeld: () => void
  const held = new Promise<void>((resolve) => (seenHeld = resolve))
  const upstream = closingServer(
    http.createServer((req, res) => {
      if (req.url === '/held') return seenHeld()
      res.setHeader('content-type', 'application/json')
      res.end('{"ok":true}')
    }),
  )
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  const target = `http://127.0.0.1:${(upstream.address() as net.AddressInfo).port}`
  const child = closingChild(spawn(process.execPath, [BIN, 'record', file, '--target', target, '--port', '0', '--admin-port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] }))
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  const url = await new Promise<string>((resolve) =>
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk
      const found = /^toolstorm proxy (\S+) /m.exec(stdout)?.[1]
      if (found) resolve(found)
    }),
  )

  expect((await fetch(`${url}/items/1`)).status).toBe(200)
  fetch(`${url}/held`).catch(() => undefined)
  await held
  child.kill('SIGINT')
  const port = Number(new URL(url).port)
  while (!(await refused(port))) await new Promise((resolve) => setImmediate(resolve))
  child.kill('SIGINT')

  expect(await exited, stderr).toEqual({ code: 0, signal: null })
  const lines = (await readFile(file, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { request?: { url: string } })
  expect(lines.some((line) => line.request?.url.endsWith('/items/1'))).toBe(true)
})
