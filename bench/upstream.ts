/** Benchmark upstream: fixed bodies of 64 B and 64 KiB over keep-alive. Prints its port. */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

const bodies: Record<string, Buffer> = { '/64b': Buffer.alloc(64, 'a'), '/64k': Buffer.alloc(64 * 1024, 'b') }
const server = http.createServer((req, res) => {
  const body = bodies[req.url ?? ''] ?? bodies['/64b']!
  req.resume()
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length })
  res.end(body)
})
server.keepAliveTimeout = 30_000
server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port))
