/** Reference: the smallest node:http + undici forwarder (no rules, no evidence, no safety). */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Agent, type Dispatcher } from 'undici'

const target = new URL(process.argv[2] as string)
const agent = new Agent({ keepAliveTimeout: 4000 })
const server = http.createServer((req, res) => {
  agent.dispatch(
    { origin: target.origin, path: req.url ?? '/', method: (req.method ?? 'GET') as Dispatcher.HttpMethod, headers: { host: target.host }, body: null },
    {
      onRequestStart() {},
      onResponseStart(_controller, status, headers) {
        res.writeHead(status, headers as http.OutgoingHttpHeaders)
      },
      onResponseData(_controller, chunk) {
        res.write(chunk)
      },
      onResponseEnd() {
        res.end()
      },
      onResponseError() {
        res.destroy()
      },
    },
  )
})
server.keepAliveTimeout = 30_000
server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port))
