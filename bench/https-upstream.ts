/** Benchmark HTTPS upstream: fixed 64 B body over keep-alive. Args: key file, cert file. Prints its port. */
import { readFileSync } from 'node:fs'
import https from 'node:https'
import type { AddressInfo } from 'node:net'

const body = Buffer.alloc(64, 'a')
const server = https.createServer({ key: readFileSync(process.argv[2] as string), cert: readFileSync(process.argv[3] as string) }, (req, res) => {
  req.resume()
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length })
  res.end(body)
})
server.keepAliveTimeout = 30_000
server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port))
