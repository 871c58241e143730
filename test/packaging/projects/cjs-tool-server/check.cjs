// A CommonJS project without msw or vitest: every entry point loads with require(), the proxy
// records the effects server.cjs reports, and intercept() works with msw absent.
'use strict'
const { spawn } = require('node:child_process')
const http = require('node:http')
const path = require('node:path')

const result = { entries: {} }
for (const entry of ['toolstorm', 'toolstorm/interceptors', 'toolstorm/effects', 'toolstorm/proxy', 'toolstorm/cassette', 'toolstorm/extend', 'toolstorm/package.json']) {
  result.entries[entry] = Object.keys(require(entry)).length
}
try {
  require.resolve('msw')
  result.msw = 'installed'
} catch {
  result.msw = 'absent'
}
const { createStorm } = require('toolstorm')
const { intercept, stormHandlers } = require('toolstorm/interceptors')
const { startProxy } = require('toolstorm/proxy')
try {
  stormHandlers(createStorm())
} catch (error) {
  result.stormHandlersError = { code: error.code, message: error.message }
}

function post(proxyUrl, target, body) {
  const proxy = new URL(proxyUrl)
  return new Promise((resolve) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port, method: 'POST', path: target, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    })
    req.on('error', (error) => resolve(error.code))
    req.end(body)
  })
}

async function main() {
  const proxy = await startProxy({ config: { rules: [{ name: 'lost-ack', route: 'POST /ship', kind: 'response_lost', calls: [1] }] } })
  const server = spawn(process.execPath, [path.join(__dirname, 'server.cjs')], { env: { ...process.env, TOOLSTORM_SIDECAR: proxy.adminUrl }, stdio: ['ignore', 'pipe', 'inherit'] })
  try {
    const port = await new Promise((resolve) => server.stdout.once('data', (chunk) => resolve(chunk.toString().trim())))
    const target = `http://127.0.0.1:${port}/ship`
    result.statuses = [await post(proxy.url, target, '{"order":"o-1"}'), await post(proxy.url, target, '{"order":"o-1"}')]
    result.effects = proxy.storm.report().effects.map((e) => [e.name, e.key, e.call])

    const interception = intercept(createStorm({ rules: [{ name: 'busy', route: 'GET /state', kind: 'rate_limit', calls: [1] }] }))
    try {
      result.intercepted = [(await fetch(`http://127.0.0.1:${port}/state`)).status, (await fetch(`http://127.0.0.1:${port}/state`)).status]
    } finally {
      interception.dispose()
    }
  } finally {
    server.kill()
    await proxy.close()
  }
  console.log(JSON.stringify(result))
}
main().catch((error) => {
  console.error(error)
  process.exitCode = 1
})
