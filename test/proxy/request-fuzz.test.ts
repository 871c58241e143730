/**
 * Random and mutated request heads thrown at the proxy process, spawned as users run it: every
 * reply is a well-formed status line other than 500 (nothing threw), or a closed connection; the
 * process survives, never reports a failed exchange, and serves a valid request afterwards.
 * Seeded (change FUZZ_SEED to explore), bounded in time.
 */
import { readFileSync } from 'node:fs'
import net from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROOT } from '../helpers/cli.js'
import { startUpstream, type Upstream } from '../helpers/upstream.js'
import { startCli, type RunningCli } from '../ui/spawn-cli.js'

const SEED = Number(process.env.FUZZ_SEED ?? 20261201)
const BUDGET_MS = 3_000
const PARALLEL = 16
const SEEDS = (JSON.parse(readFileSync(`${ROOT}/fixtures/fuzz/request-heads.json`, 'utf8')) as { heads: string[] }).heads

/** mulberry32: a small seeded PRNG, so a failing case can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const PIECES = ['\r\n', '\n', '\r', '\0', ' ', '\t', ':', '/', '//', '?', '#', '%', '%00', '@', '[', ']', ':99999', ':-1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'Host: ', 'Host: a b\r\n', 'Content-Length: 5\r\n', 'Content-Length: 99999999999999999999\r\n', 'Transfer-Encoding: chunked\r\n', 'Transfer-Encoding: gzip, chunked\r\n', 'Expect: 100-continue\r\n', 'Connection: close\r\n', 'Connection: keep-alive\r\n', 'ffffffff\r\n', '0\r\n\r\n', '\u00ff', '\u0080', 'é', 'x'.repeat(300), 'http://', 'http://a b/', 'http://x:99999/', 'CONNECT ', 'GET ']

function mutate(random: () => number, head: string): string {
  let text = head
  const edits = 1 + Math.floor(random() * 4)
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(random() * (text.length + 1))
    const pick = random()
    if (pick < 0.3) text = text.slice(0, at) + PIECES[Math.floor(random() * PIECES.length)] + text.slice(at)
    else if (pick < 0.5) text = text.slice(0, at) + text.slice(at + 1 + Math.floor(random() * 8))
    else if (pick < 0.65) text = text.slice(0, at) + String.fromCharCode(Math.floor(random() * 256)) + text.slice(at + 1)
    else if (pick < 0.75) text = text.slice(0, at)
    else if (pick < 0.85) {
      // Many header lines, around the 2000-line limit.
      const count = 1990 + Math.floor(random() * 20)
      const lines = Array.from({ length: count }, (_, n) => `${n.toString(36)}:v\r\n`).join('')
      const end = text.indexOf('\r\n')
      text = end === -1 ? text + lines : text.slice(0, end + 2) + lines + text.slice(end + 2)
    } else text = text + text
  }
  return text
}

function randomBytes(random: () => number): Buffer {
  return Buffer.from(Array.from({ length: Math.floor(random() * 200) }, () => Math.floor(random() * 256)))
}

/** Send, then half-close or wait: the reply up to the close (or a short timeout). */
function exchange(port: number, bytes: Buffer, halfClose: boolean): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => (halfClose ? socket.end(bytes) : socket.write(bytes)))
    let reply = ''
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString('latin1')))
    socket.on('close', () => resolve(reply))
    socket.on('error', () => resolve(reply))
    socket.setTimeout(400, () => socket.destroy())
  })
}

let upstream: Upstream
let proxy: RunningCli
let port = 0
let stderr = ''
beforeAll(async () => {
  upstream = await startUpstream()
  proxy = await startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0'], 1)
  proxy.child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  port = Number(/^toolstorm proxy http:\/\/127\.0\.0\.1:(\d+) /.exec(proxy.lines[0] ?? '')?.[1])
})
afterAll(async () => {
  await proxy?.stop()
  await upstream?.close()
})

describe('request fuzz', () => {
  it(`survives random and mutated request heads (seed ${SEED}), answering each with a well-formed status other than 500 or a close`, async () => {
    const random = prng(SEED)
    const host = `127.0.0.1:${port}`
    const started = performance.now()
    let cases = 0
    const bad: string[] = []
    while (performance.now() - started < BUDGET_MS) {
      const batch = Array.from({ length: PARALLEL }, () => {
        const seed = (SEEDS[Math.floor(random() * SEEDS.length)] as string).replaceAll('{HOST}', host)
        const bytes = random() < 0.1 ? randomBytes(random) : Buffer.from(mutate(random, seed), 'latin1')
        return { bytes, halfClose: random() < 0.5 }
      })
      const replies = await Promise.all(batch.map(({ bytes, halfClose }) => exchange(port, bytes, halfClose)))
      replies.forEach((reply, i) => {
        cases++
        // Every response on the connection, including a pipelined one's.
        const statuses = [...reply.matchAll(/(?:^|\r\n)HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))
        const wellFormed = reply === '' || /^HTTP\/1\.1 \d{3} /.test(reply)
        if (!wellFormed || statuses.includes(500)) bad.push(`${JSON.stringify(batch[i]!.bytes.toString('latin1').slice(0, 300))} -> ${JSON.stringify(reply.slice(0, 200))}`)
      })
      expect(proxy.child.exitCode).toBeNull()
    }
    expect(bad).toEqual([])
    expect(cases).toBeGreaterThan(100)
    expect(stderr).not.toContain('ERR_EXCHANGE_FAILED')
    expect(proxy.child.exitCode).toBeNull()
    const after = await fetch(`http://${host}/items/a`)
    expect(after.status).toBe(200)
  }, 30_000)
})
