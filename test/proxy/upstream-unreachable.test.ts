/**
 * An unreachable upstream: the 502 names the upstream the request was going to (not the proxy's
 * own address), and the console gets one line per upstream origin and error code, without
 * credentials (issue #14).
 */
import http from 'node:http'
import net from 'node:net'
import { describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { servedUrl, startCli } from '../ui/spawn-cli.js'
import { closing } from '../helpers/teardown.js'

/** Free ports for the data plane and the admin API. */
const PORTS = ['--port', '0', '--admin-port', '0']

/** A port nothing listens on (it was free a moment ago). */
async function deadPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** `GET path` from the proxy, as-is (absolute-form in forward mode). */
function get(proxyUrl: string, path: string): Promise<{ status: number; message: string }> {
  const { hostname, port } = new URL(proxyUrl)
  return new Promise((resolve, reject) => {
    http
      .get({ host: hostname, port, path, agent: false }, (res) => {
        let body = ''
        res.on('data', (chunk: Buffer) => (body += chunk.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, message: (JSON.parse(body) as { error: { message: string } }).error.message }))
      })
      .on('error', reject)
  })
}

describe('an unreachable upstream', () => {
  // Pass-through (no fault, no observer) and the general flow (an observer) build the 502 apart.
  it.each([
    ['on the pass-through path', {}],
    ['on the observed path', { observer: {} }],
  ])('gets a 502 naming the upstream in reverse mode, %s', async (_path, extra) => {
    const dead = await deadPort()
    const proxy = closing(await startProxy({ targets: [`http://127.0.0.1:${dead}/api`], ...extra }))
    const { status, message } = await get(proxy.url, '/ship?x=1')
    expect(status).toBe(502)
    expect(message).toBe(`[toolstorm] Failed to reach the upstream for "GET http://127.0.0.1:${dead}/api/ship?x=1": ECONNREFUSED.`)
  })

  it('logs one line per upstream origin and error code, without credentials', async () => {
    const [first, second] = [await deadPort(), await deadPort()]
    const lines: string[] = []
    const proxy = closing(await startProxy({ warn: (line) => lines.push(line) }))
    const secret = 'sk-proj-4fTz9QmX2wLpR8vK3nB7yH1cD6eJ0aUs'
    for (let i = 0; i < 3; i++) expect((await get(proxy.url, `http://user:hunter2@127.0.0.1:${first}/ship?api_key=${secret}&n=${i}`)).status).toBe(502)
    const { message } = await get(proxy.url, `http://127.0.0.1:${second}/items/a?token=${secret}`)
    expect(message).toContain(`"GET http://127.0.0.1:${second}/items/a?token=`)
    expect(message).not.toContain(secret)
    expect(lines).toHaveLength(2)
    expect(lines[0]).toContain(`upstream http://127.0.0.1:${first} unreachable: ECONNREFUSED`)
    expect(lines[1]).toContain(`upstream http://127.0.0.1:${second} unreachable: ECONNREFUSED`)
    for (const line of lines) {
      expect(line).not.toContain(secret)
      expect(line).not.toContain('hunter2')
    }
  })

  it('gets a 502 naming the upstream from the replay server passing an unmatched request through, logged once', async () => {
    const dead = await deadPort()
    const lines: string[] = []
    const replay = closing(await startReplayServer(Cassette.from({}, []), { mode: 'passthrough-unmatched', targets: [`http://127.0.0.1:${dead}`], warn: (line) => lines.push(line) }))
    for (let i = 0; i < 2; i++) {
      const { status, message } = await get(replay.url, '/ship')
      expect(status).toBe(502)
      expect(message).toBe(`[toolstorm] Failed to reach the upstream for "GET http://127.0.0.1:${dead}/ship": ECONNREFUSED.`)
    }
    expect(lines).toHaveLength(1)
  })

  it('is logged on the console of toolstorm proxy', async () => {
    const dead = await deadPort()
    const cli = await startCli(['proxy', '--target', `http://127.0.0.1:${dead}`, ...PORTS], 1)
    expect((await get(servedUrl(cli), '/ship')).status).toBe(502)
    expect((await get(servedUrl(cli), '/ship')).status).toBe(502)
    await cli.stop()
    const stderr = cli.stderr
    expect(stderr.split('\n').filter((line) => line.includes('unreachable: ECONNREFUSED'))).toEqual([`[toolstorm] upstream http://127.0.0.1:${dead} unreachable: ECONNREFUSED (first for "GET http://127.0.0.1:${dead}/ship"; later ECONNREFUSED failures of this upstream are not logged)`])
  })
})
