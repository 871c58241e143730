/**
 * A client that pipelines many GETs for 64 KiB answers and reads nothing (issue 14, item 5): what
 * it costs the proxy process in memory (RSS growth), file descriptors, and requests sent upstream
 * while it does not read; then it reads, and every answer must arrive. Run alone:
 * `npm run bench -- pipelining`.
 */
import { readdirSync } from 'node:fs'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { startChild } from './processes.js'

const BIN = path.join(fileURLToPath(new URL('..', import.meta.url)), 'bin/toolstorm.js')
const BODY = Buffer.alloc(64 * 1024, 'b')

export interface PipeliningOptions {
  /** Pipelined requests on the one connection. */
  requests: number
  /** How long the client reads nothing. */
  stallMs: number
}

function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length
  } catch {
    return 0
  }
}

export async function benchPipelining(options: PipeliningOptions): Promise<Record<string, unknown>> {
  // In this process, so its request count is exact; the proxy runs as users run it.
  let upstreamRequests = 0
  const upstream = http.createServer((req, res) => {
    upstreamRequests++
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BODY.length })
    res.end(BODY)
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  const proxy = await startChild(process.execPath, [BIN, 'proxy', '--target', upstreamUrl, '--port', '0', '--admin-port', '0'])
  const pid = proxy.process.pid as number
  const port = Number(/^toolstorm proxy http:\/\/127\.0\.0\.1:(\d+) /.exec(proxy.firstLine)?.[1])
  try {
    // Warm: one ordinary request, so the baseline includes what serving costs at all.
    await fetch(`http://127.0.0.1:${port}/warm`).then((r) => r.arrayBuffer())
    await new Promise((resolve) => setTimeout(resolve, 300))
    const baseRss = proxy.rssBytes()
    const baseFds = openFds(pid)
    upstreamRequests = 0

    const socket = net.connect(port, '127.0.0.1')
    socket.pause()
    await new Promise((resolve) => socket.once('connect', resolve))
    let heads = ''
    for (let i = 0; i < options.requests; i++) heads += `GET /64k HTTP/1.1\r\nHost: x\r\n\r\n`
    socket.write(heads)
    let peakRss = baseRss
    let peakFds = baseFds
    const started = performance.now()
    while (performance.now() - started < options.stallMs) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      peakRss = Math.max(peakRss, proxy.rssBytes())
      peakFds = Math.max(peakFds, openFds(pid))
    }
    const upstreamWhileStalled = upstreamRequests
    const stalledRss = peakRss

    // Now read: every answer must arrive (counted by status lines; the bodies hold no 'H').
    let answers = 0
    let tail = ''
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${answers} of ${options.requests} answers arrived`)), 60_000)
      socket.on('data', (chunk: Buffer) => {
        const text = tail + chunk.toString('latin1')
        answers += text.split('HTTP/1.1 200 OK').length - 1
        tail = text.slice(-16)
        peakRss = Math.max(peakRss, proxy.rssBytes())
        if (answers >= options.requests) {
          clearTimeout(timer)
          resolve()
        }
      })
      socket.resume()
    })
    socket.destroy()

    const growthMiB = (peakRss - baseRss) / 2 ** 20
    const stalledGrowthMiB = (stalledRss - baseRss) / 2 ** 20
    const row = { requests: options.requests, upstreamWhileStalled, answers, baseRssMiB: baseRss / 2 ** 20, peakRssMiB: peakRss / 2 ** 20, stalledGrowthMiB, growthMiB, baseFds, peakFds }
    const table = [
      '| pipelined GETs (64 KiB answers) | sent upstream while the client read nothing | RSS growth while it read nothing | answers read | RSS base → peak, reading included (growth) | fds base → peak |',
      '|---|---|---|---|---|---|',
      `| ${row.requests} | ${row.upstreamWhileStalled} | +${stalledGrowthMiB.toFixed(1)} MiB | ${row.answers} | ${row.baseRssMiB.toFixed(0)} → ${row.peakRssMiB.toFixed(0)} MiB (+${growthMiB.toFixed(1)}) | ${baseFds} → ${peakFds} |`,
    ].join('\n')
    const gates = {
      'RSS grows by ≤ 32 MiB': growthMiB <= 32,
      'fds grow by ≤ 8': peakFds - baseFds <= 8,
      'every answer arrives': answers === options.requests,
    }
    return { suite: 'pipelining', options, row, gates, table }
  } finally {
    await proxy.stop()
    upstream.closeAllConnections()
    await new Promise((resolve) => upstream.close(resolve))
  }
}
