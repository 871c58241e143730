// intercept() users never load msw: any attempt to resolve it fails this script.
import module from 'node:module'
import nodeHttp from 'node:http'

const refuseMsw = (specifier, context) => {
  if (specifier === 'msw' || specifier.startsWith('msw/')) throw new Error('msw was loaded (' + specifier + ' from ' + context.parentURL + ')')
}
// Node 22.15+ runs resolve hooks in this thread (registerHooks); Node 26 deprecates register() (DEP0205), which Node 20 still needs.
if (module.registerHooks) {
  module.registerHooks({ resolve: (specifier, context, next) => (refuseMsw(specifier, context), next(specifier, context)) })
} else {
  module.register('data:text/javascript,' + encodeURIComponent(`const refuseMsw = ${refuseMsw}
export async function resolve(specifier, context, next) { refuseMsw(specifier, context); return next(specifier, context) }`))
}

const { createStorm } = await import('toolstorm')
const { intercept } = await import('toolstorm/interceptors')
await import('toolstorm/cassette')
await import('toolstorm/proxy')
const upstream = nodeHttp.createServer((_req, res) => res.end('{"ok":true}'))
await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve))
const interception = intercept(createStorm({ rules: [{ name: 'busy', route: 'GET /x', kind: 'rate_limit', calls: [1] }] }))
const statuses = []
try {
  statuses.push((await fetch(`http://127.0.0.1:${upstream.address().port}/x`)).status)
  statuses.push((await fetch(`http://127.0.0.1:${upstream.address().port}/x`)).status)
} finally {
  interception.dispose()
  upstream.close()
}
console.log(JSON.stringify({ statuses }))
