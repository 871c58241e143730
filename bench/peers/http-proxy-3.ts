/** The peer: http-proxy-3 as a reverse proxy with a keep-alive agent. Prints its port. */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createProxyServer } from 'http-proxy-3'

const target = process.argv[2] as string
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 })
const proxy = createProxyServer({ target, agent })
proxy.on('error', (_error, _req, res) => {
  const response = res as http.ServerResponse
  if (!response.headersSent) response.writeHead(502)
  response.end()
})
const server = http.createServer((req, res) => proxy.web(req, res))
server.keepAliveTimeout = 30_000
server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port))
