/** Benchmark upstream for MCP routing: answers every request with one small JSON-RPC result. Prints its port. */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'ok' }] } }))
const server = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length })
    res.end(body)
  })
})
server.keepAliveTimeout = 30_000
server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port))
