/**
 * The added cost of intercepting HTTPS, in one run, interleaved (ABAB…):
 * - TLS handshakes per second: direct to the HTTPS upstream, through the proxy's MITM with a warm
 *   leaf cache (CONNECT + handshake with the proxy), and through an untouched tunnel (CONNECT +
 *   handshake with the upstream). Each handshake is a full one (no session resumption).
 * - The first handshake for a new host (cold cache: one leaf signed), against a warm one.
 * - req/s over keep-alive: direct HTTPS, HTTPS through the MITM (TLS on both legs), and plain
 *   HTTP direct and through the forward proxy, for reference.
 * autocannon cannot go through a CONNECT proxy, so the load comes from undici and `tls.connect`
 * in this process. The load generator, the upstreams and the proxies share this machine's cores.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import tls from 'node:tls'
import { fileURLToPath } from 'node:url'
import { Agent, ProxyAgent, request, type Dispatcher } from 'undici'
import { createTestCa } from '../test/helpers/test-ca.js'
import { median, startChild, startTs, type Child } from './processes.js'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const BIN = path.join(ROOT, 'bin/toolstorm.js')

interface Options {
  rounds: number
  seconds: number
  /** Concurrent handshakes or request loops. */
  concurrency: number
  /** New hosts for the cold-cache measurement. */
  coldHosts: number
}

/** CONNECT through `proxyPort` to `host:port`; resolves with the socket once the tunnel is open. */
function openTunnel(proxyPort: number, host: string, port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(proxyPort, '127.0.0.1', () => socket.write(`CONNECT ${host}:${port} HTTP/1.1\r\nHost: ${host}:${port}\r\n\r\n`))
    let head = ''
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1')
      if (!head.includes('\r\n\r\n')) return
      socket.off('data', onData)
      if (head.startsWith('HTTP/1.1 200')) resolve(socket)
      else reject(new Error(head.split('\r\n')[0]))
    }
    socket.on('data', onData)
    socket.once('error', reject)
  })
}

/** One full TLS handshake, over `socket` or a new connection to host:port. */
function handshake(ca: string, host: string, port: number, socket?: net.Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    const secure = tls.connect({ ...(socket ? { socket } : { port }), host, ca, ...(net.isIP(host) ? {} : { servername: host }) })
    secure.once('secureConnect', () => {
      secure.destroy()
      resolve()
    })
    secure.once('error', reject)
  })
}

async function handshakesPerSecond(seconds: number, concurrency: number, once: () => Promise<void>): Promise<{ rate: number; errors: number }> {
  const deadline = performance.now() + seconds * 1000
  let done = 0
  let errors = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        try {
          await once()
          done++
        } catch {
          errors++
        }
      }
    }),
  )
  return { rate: done / seconds, errors }
}

async function requestsPerSecond(seconds: number, concurrency: number, url: string, dispatcher: Dispatcher): Promise<{ rate: number; errors: number }> {
  const deadline = performance.now() + seconds * 1000
  let done = 0
  let errors = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        try {
          const response = await request(url, { dispatcher })
          await response.body.dump()
          if (response.statusCode === 200) done++
          else errors++
        } catch {
          errors++
        }
      }
    }),
  )
  return { rate: done / seconds, errors }
}

export async function benchTls(options: Options): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-bench-tls-'))
  const upstreamCa = await createTestCa('bench upstream CA')
  const leaf = await upstreamCa.issue(['127.0.0.1'])
  await writeFile(path.join(dir, 'key.pem'), leaf.key)
  await writeFile(path.join(dir, 'cert.pem'), leaf.cert)
  await writeFile(path.join(dir, 'upstream-ca.pem'), upstreamCa.certPem)

  const httpsUpstream = await startTs('bench/https-upstream.ts', [path.join(dir, 'key.pem'), path.join(dir, 'cert.pem')])
  const httpUpstream = await startTs('bench/upstream.ts')
  const httpsPort = Number(httpsUpstream.firstLine.trim())
  const httpPort = Number(httpUpstream.firstLine.trim())
  const proxyArgs = ['proxy', '--port', '0', '--admin-port', '0', '--ca-dir', path.join(dir, 'ca'), '--upstream-ca', path.join(dir, 'upstream-ca.pem'), '--connect-port', String(httpsPort)]
  const mitm = await startChild(process.execPath, [BIN, ...proxyArgs])
  // With no rules, --tunnel-unmatched tunnels every host untouched: CONNECT cost without the MITM.
  const tunnel = await startChild(process.execPath, [BIN, ...proxyArgs, '--tunnel-unmatched'])
  const proxyUrl = (child: Child) => /^toolstorm proxy (\S+) /.exec(child.firstLine)?.[1] as string
  const portOf = (child: Child) => Number(new URL(proxyUrl(child)).port)
  const toolstormCa = await readFile(path.join(dir, 'ca', 'ca.pem'), 'utf8')
  let peakRss = 0
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, mitm.rssBytes())), 250)

  const handshakeTargets = {
    'direct TLS': () => handshake(upstreamCa.certPem, '127.0.0.1', httpsPort),
    'toolstorm MITM (warm leaf)': async () => handshake(toolstormCa, '127.0.0.1', httpsPort, await openTunnel(portOf(mitm), '127.0.0.1', httpsPort)),
    'toolstorm untouched tunnel': async () => handshake(upstreamCa.certPem, '127.0.0.1', httpsPort, await openTunnel(portOf(tunnel), '127.0.0.1', httpsPort)),
  }
  const dispatchers = {
    'direct HTTPS': { url: `https://127.0.0.1:${httpsPort}/64b`, dispatcher: new Agent({ connect: { ca: upstreamCa.certPem }, connections: options.concurrency }) },
    'toolstorm MITM HTTPS': { url: `https://127.0.0.1:${httpsPort}/64b`, dispatcher: new ProxyAgent({ uri: proxyUrl(mitm), requestTls: { ca: toolstormCa }, connections: options.concurrency } as ProxyAgent.Options) },
    'direct HTTP': { url: `http://127.0.0.1:${httpPort}/64b`, dispatcher: new Agent({ connections: options.concurrency }) },
    'toolstorm forward HTTP': { url: `http://127.0.0.1:${httpPort}/64b`, dispatcher: new ProxyAgent({ uri: proxyUrl(mitm), proxyTunnel: false, connections: options.concurrency } as ProxyAgent.Options) },
  }

  const handshakes: Record<string, number[]> = {}
  const keepAlive: Record<string, number[]> = {}
  const cold: number[] = []
  const warm: number[] = []
  let errors = 0
  try {
    // Warm-up: JIT, the leaf for 127.0.0.1, keep-alive pools.
    for (const once of Object.values(handshakeTargets)) await handshakesPerSecond(0.5, options.concurrency, once)
    for (const { url, dispatcher } of Object.values(dispatchers)) await requestsPerSecond(0.5, options.concurrency, url, dispatcher)
    for (let round = 0; round < options.rounds; round++) {
      for (const [name, once] of Object.entries(handshakeTargets)) {
        const result = await handshakesPerSecond(options.seconds, options.concurrency, once)
        errors += result.errors
        ;(handshakes[name] ??= []).push(result.rate)
      }
      for (const [name, { url, dispatcher }] of Object.entries(dispatchers)) {
        const result = await requestsPerSecond(options.seconds, options.concurrency, url, dispatcher)
        errors += result.errors
        ;(keepAlive[name] ??= []).push(result.rate)
      }
    }
    // Cold leaf: a new loopback address per handshake (the MITM answers CONNECT without reaching it).
    for (let i = 0; i < options.coldHosts; i++) {
      const host = `127.0.${10 + Math.floor(i / 250)}.${(i % 250) + 1}`
      let started = performance.now()
      await handshake(toolstormCa, host, httpsPort, await openTunnel(portOf(mitm), host, httpsPort))
      cold.push(performance.now() - started)
      started = performance.now()
      await handshake(toolstormCa, host, httpsPort, await openTunnel(portOf(mitm), host, httpsPort))
      warm.push(performance.now() - started)
    }
  } finally {
    clearInterval(sampler)
    await Promise.all(Object.values(dispatchers).map(({ dispatcher }) => dispatcher.close()))
    await Promise.all([httpsUpstream, httpUpstream, mitm, tunnel].map((c) => c.stop()))
  }

  const hs = (name: string) => median(handshakes[name] ?? [0])
  const ka = (name: string) => median(keepAlive[name] ?? [0])
  const lines = [
    `TLS handshakes per second (c=${options.concurrency}, full handshakes, EC P-256):`,
    '',
    '| path | handshakes/s | × direct |',
    '|---|---|---|',
    ...Object.keys(handshakeTargets).map((name) => `| ${name} | ${Math.round(hs(name))} | ${(hs(name) / hs('direct TLS')).toFixed(2)} |`),
    '',
    `First handshake for a new host (leaf signed on demand) vs the same host again: median ${median(cold).toFixed(1)} ms vs ${median(warm).toFixed(1)} ms over ${options.coldHosts} hosts.`,
    '',
    `req/s over keep-alive (c=${options.concurrency}, 64 B bodies):`,
    '',
    '| path | req/s | × direct |',
    '|---|---|---|',
    ...['direct HTTPS', 'toolstorm MITM HTTPS'].map((name) => `| ${name} | ${Math.round(ka(name))} | ${(ka(name) / ka('direct HTTPS')).toFixed(2)} |`),
    ...['direct HTTP', 'toolstorm forward HTTP'].map((name) => `| ${name} | ${Math.round(ka(name))} | ${(ka(name) / ka('direct HTTP')).toFixed(2)} |`),
    '',
    `MITM proxy RSS peak: ${(peakRss / 2 ** 20).toFixed(0)} MiB.`,
  ]
  const gates = {
    'warm MITM handshakes ≥ 0.25× direct': hs('toolstorm MITM (warm leaf)') >= 0.25 * hs('direct TLS'),
    // TLS on both legs, in one thread: about a quarter of direct HTTPS on this 2-core machine.
    'MITM keep-alive HTTPS ≥ 0.2× direct HTTPS': ka('toolstorm MITM HTTPS') >= 0.2 * ka('direct HTTPS'),
    'a new host costs < 50 ms (median)': median(cold) < 50,
    'zero errors': errors === 0,
  }
  return {
    suite: 'tls',
    options,
    handshakesPerSecond: Object.fromEntries(Object.keys(handshakeTargets).map((name) => [name, hs(name)])),
    keepAliveRequestsPerSecond: Object.fromEntries(Object.keys(dispatchers).map((name) => [name, ka(name)])),
    coldLeafMs: median(cold),
    warmLeafMs: median(warm),
    peakRssMiB: peakRss / 2 ** 20,
    errors,
    gates,
    table: lines.join('\n'),
  }
}
