/**
 * Shutdown always ends with the verdict (replay) or the written report and cassette (proxy,
 * record), whatever clients left open (issue #14, item 6). Each process serves until SIGTERM.
 */
import http from 'node:http'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { abandonConnect } from '../helpers/abandon-connect.js'
import { servedUrl, startCli } from '../ui/spawn-cli.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'

/** Free ports for the data plane and the admin API. */
const PORTS = ['--port', '0', '--admin-port', '0']

let dir: string
let upstream: Upstream
let cassette: string
// Never the user's CA folder.
const env = () => ({ TOOLSTORM_CA_DIR: path.join(dir, 'ca') })

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-shutdown-'))
  upstream = await startUpstream()
  cassette = path.join(dir, 'one.cassette.jsonl')
  // One plain-HTTP exchange in forward mode: the replay makes its CA only on the first CONNECT.
  const client = `require('node:http').get({ host: new URL(process.env.HTTP_PROXY).hostname, port: new URL(process.env.HTTP_PROXY).port, path: '${upstream.url}/items/a' }, (res) => res.resume())`
  const recorded = await runCli(['record', cassette, '--port', '0', '--admin-port', '0', '--', process.execPath, '-e', client], { env: env() })
  expect(recorded.code).toBe(0)
})
afterAll(async () => {
  await upstream.close()
  await rm(dir, { recursive: true, force: true })
})

/** One request for the recorded exchange, through the server as an HTTP proxy. */
function replayed(proxyUrl: string): Promise<number> {
  const { hostname, port } = new URL(proxyUrl)
  return new Promise((resolve, reject) => {
    http
      .get({ host: hostname, port, path: `${upstream.url}/items/a` }, (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode ?? 0))
      })
      .on('error', reject)
  })
}

describe('shutdown with abandoned CONNECT tunnels', { timeout: 60_000 }, () => {
  it.each(['before-tunnel', 'mid-handshake'] as const)('replay exits with its verdict when a CONNECT client half-closes %s', async (when) => {
    const replay = await startCli(['replay', cassette, ...PORTS], 1, env())
    expect(await replayed(servedUrl(replay))).toBe(200)
    const socket = await abandonConnect(servedUrl(replay), when)
    onTestFinished(() => void socket.destroy())
    await new Promise((resolve) => setTimeout(resolve, 100))
    const code = await replay.stop()
    const stderr = replay.stderr
    expect(stderr).toContain('Replayed 1 of 1 exchange(s)')
    expect(code).toBe(0)
  })

  it.each([
    ['proxy', 'report.json', (file: string) => ['proxy', '--report', file], 'report'],
    ['record', 'recorded.cassette.jsonl', (file: string) => ['record', file], 'cassette'],
  ] as const)('%s writes its output and exits 0 when a CONNECT client half-closes mid-handshake', async (_command, name, args, what) => {
    const file = path.join(dir, name)
    const cli = await startCli([...args(file), ...PORTS], 1, env())
    const socket = await abandonConnect(servedUrl(cli), 'mid-handshake')
    onTestFinished(() => void socket.destroy())
    await new Promise((resolve) => setTimeout(resolve, 100))
    const code = await cli.stop()
    expect(cli.stderr).toContain(`${what} written to ${file}`)
    expect(code).toBe(0)
    expect(existsSync(file)).toBe(true)
  })
})
