/**
 * A CONNECT client that leaves before its tunnel is up (it half-closes and never sends more) has
 * its socket closed by the server, at once: nothing else would ever close it (issue #14, item 6).
 */
import net from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { exchangeAt } from '../helpers/cassette-fixtures.js'
import { abandonConnect } from '../helpers/abandon-connect.js'
import { closing } from '../helpers/teardown.js'

/** Resolves true when the server closes the client's socket within `ms`. */
function closedByServer(socket: net.Socket, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms)
    // Read what the server sent (its 200): a socket with unread data never reports its end.
    socket.resume()
    socket.once('close', () => {
      clearTimeout(timer)
      resolve(true)
    })
  })
}

describe('abandoned CONNECT tunnels', () => {
  it('the proxy closes a tunnel whose client half-closed mid-handshake', async () => {
    const proxy = closing(await startProxy({}))
    const socket = await abandonConnect(proxy.url, 'mid-handshake')
    onTestFinished(() => void socket.destroy())
    expect(await closedByServer(socket, 5_000)).toBe(true)
  })

  it('the replay server closes a tunnel whose client half-closed before its CA was made', async () => {
    // Plain-HTTP exchanges only: the CA is made on the first CONNECT, after the client left.
    const replay = closing(await startReplayServer(Cassette.from({}, [exchangeAt(1, { request: { method: 'GET', url: 'http://127.0.0.1:9/items/1', headers: {}, body: null } })])))
    const socket = await abandonConnect(replay.url, 'before-tunnel')
    onTestFinished(() => void socket.destroy())
    expect(await closedByServer(socket, 5_000)).toBe(true)
  })
})
