// An agent that waits on I/O, for `npm run bench -- explore`: it starts a tool server of its own
// whose three routes each answer after 100 ms, calls them one after the other through HTTP_PROXY
// (node:http in absolute form, the run in the proxy credentials), and exits 0 whatever they answer.
// With `--routes N --bytes B --delay MS` (`npm run bench -- explore-memory`): N routes (a read, then
// two writes, and so on), each answering B bytes of JSON after MS ms.
import http from 'node:http'
import { parseArgs } from 'node:util'

const { values } = parseArgs({ options: { routes: { type: 'string' }, bytes: { type: 'string' }, delay: { type: 'string' } } })
const delay = Number(values.delay ?? 100)
const answer = values.bytes ? JSON.stringify({ ok: true, pad: 'x'.repeat(Math.max(0, Number(values.bytes) - 22)) }) : '{"ok":true,"items":[1,2,3]}'

const server = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(answer), delay))
})
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
const target = `http://127.0.0.1:${server.address().port}`
const proxy = new URL(process.env.HTTP_PROXY)
const auth = proxy.username ? { 'proxy-authorization': `Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString('base64')}` } : {}

function call(method, path) {
  return new Promise((resolve) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port, method, path: `${target}${path}`, headers: { host: new URL(target).host, ...auth, ...(method === 'POST' ? { 'content-type': 'application/json', 'content-length': 2 } : {}) } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
      res.on('error', () => resolve(0))
    })
    req.on('error', () => resolve(0))
    req.end(method === 'POST' ? '{}' : undefined)
  })
}

if (values.routes) {
  for (let index = 0; index < Number(values.routes); index++) await call(index % 3 === 0 ? 'GET' : 'POST', `/route-${index}`)
} else {
  await call('GET', '/inventory')
  await call('POST', '/orders')
  await call('GET', '/status')
}
server.close()
