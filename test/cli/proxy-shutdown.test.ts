/**
 * `toolstorm proxy` exits on SIGTERM within its grace, with its report written, whatever it served
 * (#31). It used to write the report and then spin at ~94 % CPU forever: a reset of a socket whose
 * FIN was already on its way (the client had half-closed) fails in libuv, and Node then never
 * closes that handle, so the process waited for it at exit.
 */
import { spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import http from 'node:http'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { expect, it, onTestFinished } from 'vitest'
import { BIN } from '../helpers/cli.js'

/** How long the CLI may take to exit after SIGTERM: its 2 s grace, and room for a loaded machine. */
const EXIT_WITHIN_MS = 8_000

it('exits within its grace with its report after resets, a subscriber that stopped reading, and a reset of a half-closed client', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-shutdown-'))
  onTestFinished(() => rm(dir, { recursive: true, force: true }))
  // The upstream answers POST /ship when the test says so.
  const held: http.ServerResponse[] = []
  let onHeld: (() => void) | null = null
  const upstream = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      if (req.url !== '/ship') return res.end('{"ok":true}')
      held.push(res)
      onHeld?.()
    })
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  onTestFinished(() => {
    upstream.closeAllConnections()
    upstream.close()
  })
  const rules = path.join(dir, 'rules.json')
  const report = path.join(dir, 'report.json')
  await writeFile(
    rules,
    JSON.stringify({
      seed: 3,
      rules: [
        { name: 'reset', route: 'GET /items/*', kind: 'reset', probability: 0.3 },
        { name: 'lost', route: 'POST /ship', kind: 'response_lost' },
      ],
    }),
  )
  const child = spawn(process.execPath, [BIN, 'proxy', '--target', `http://127.0.0.1:${(upstream.address() as net.AddressInfo).port}`, '--port', '0', '--admin-port', '0', '--rules', rules, '--report', report], { stdio: ['ignore', 'pipe', 'pipe'] })
  onTestFinished(() => void child.kill('SIGKILL'))
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  while (!/admin token: /.test(stdout)) {
    if (child.exitCode !== null) throw new Error(`the proxy exited: ${stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const url = /^toolstorm proxy (\S+) /m.exec(stdout)![1]!
  const adminUrl = / · admin (\S+)$/m.exec(stdout)![1]!
  const token = /^admin token: (\S+)/m.exec(stdout)![1]!
  const { port } = new URL(url)

  // A load of fresh connections, some reset by the rule.
  const get = (i: number) =>
    new Promise<void>((resolve) => {
      http
        .get(`${url}/items/${i}`, { agent: false }, (res) => res.resume().on('end', resolve))
        .on('error', () => resolve())
    })
  for (let i = 0; i < 100; i++) await get(i)
  // A dashboard subscriber that stops reading.
  const subscriber = net.connect(Number(new URL(adminUrl).port), '127.0.0.1', () => subscriber.write(`GET /events HTTP/1.1\r\nhost: ${new URL(adminUrl).host}\r\nauthorization: Bearer ${token}\r\n\r\n`))
  subscriber.on('error', () => undefined)
  subscriber.pause()
  onTestFinished(() => void subscriber.destroy())
  for (let i = 100; i < 150; i++) await get(i)

  // A client half-closes while its lost response arrives: stopped, the proxy reads nothing, so its
  // client's FIN and then the upstream's answer wait for it together, and it resets the client's
  // socket in the same turn as it ends its own side.
  const client = net.connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true })
  client.on('error', () => undefined)
  client.resume()
  await new Promise((resolve) => client.once('connect', resolve))
  const arrived = new Promise<void>((resolve) => (onHeld = resolve))
  client.write('POST /ship HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}')
  await arrived
  child.kill('SIGSTOP')
  client.end()
  await new Promise((resolve) => client.once('finish', resolve))
  await new Promise<void>((resolve) => held.shift()!.end('{"shipment":1}', () => resolve()))
  child.kill('SIGCONT')
  await new Promise((resolve) => client.once('close', resolve))

  const signalled = Date.now()
  child.kill('SIGTERM')
  const code = await Promise.race([exited, new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), EXIT_WITHIN_MS))])
  expect(code, stderr).toBe(0)
  expect(Date.now() - signalled).toBeLessThan(EXIT_WITHIN_MS)
  const written = JSON.parse(await readFile(report, 'utf8')) as { calls: Array<{ route: string; outcome: string }> }
  expect(written.calls).toHaveLength(151)
  // Which of the two waiting events the proxy reads first after SIGCONT is the kernel's choice: the
  // upstream's answer first resets the client (`reset`); the client's FIN first ends the connection
  // and the exchange sees its client gone (`cancelled`). Either way the socket was reset half-closed,
  // which is what used to keep the process alive.
  const last = written.calls.at(-1)!
  expect(last.route).toBe('POST /ship')
  expect(['reset', 'cancelled'], `outcome ${last.outcome}`).toContain(last.outcome)
  expect(written.calls.filter((call) => call.outcome === 'reset').length).toBeGreaterThan(10)
})
