/**
 * Status faults ask the plug-ins for a service's own answer (the FailureShaper port): the
 * model-calls plug-in gives the providers' error bodies, also when model calls are not recorded
 * (`modelCalls: false`), and a plug-in of the user's shapes its own service's refusals. A request
 * no plug-in knows keeps the generic answer.
 */
import { describe, expect, it, onTestFinished } from 'vitest'
import type { ExchangePlugin } from '../../src/engine/plugin.js'
import type { StormConfigInput } from '../../src/engine/schema/config.js'
import { defaultPlugins } from '../../src/default-plugins.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { startUpstream } from '../helpers/upstream.js'

const RULES: StormConfigInput = { rules: [{ name: 'busy', route: 'POST /**', kind: 'rate_limit', delay: 2 }] }

/** A search API's own refusal: 429 with its body and its reset header. */
const searchApi: ExchangePlugin = {
  name: 'search-api',
  shapeFailure(request, failure, options) {
    if (failure !== 'rate_limit' || !new URL(request.url).pathname.startsWith('/search')) return null
    const body = new TextEncoder().encode(JSON.stringify({ code: 'QUOTA', retryInSeconds: options.retryAfter }))
    return { status: 429, headers: { 'content-type': 'application/json', 'x-quota-reset': String(options.retryAfter) }, body }
  },
}

async function proxy(options: { plugins?: ExchangePlugin[]; modelCalls?: boolean }) {
  const upstream = await startUpstream()
  onTestFinished(() => upstream.close())
  const started = await startProxy({ targets: [upstream.url], config: RULES, ...options })
  onTestFinished(() => started.close())
  return (path: string) => fetch(`${started.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer sk-test' }, body: '{"model":"gpt-x","messages":[]}' })
}

describe('failure shapes from the plug-ins', () => {
  it('answer a model call with the provider 429 even when model calls are not recorded', async () => {
    const post = await proxy({ modelCalls: false })
    const response = await post('/v1/chat/completions')
    expect(response.status).toBe(429)
    expect(response.headers.get('x-request-id')).toMatch(/^req_/)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('rate_limit_exceeded')
  })

  it("answer with a user plug-in's own shape for its service, and generically elsewhere", async () => {
    const post = await proxy({ plugins: [...defaultPlugins(), searchApi] })
    const search = await post('/search?q=weather')
    expect([search.status, search.headers.get('x-quota-reset'), await search.json()]).toEqual([429, '2', { code: 'QUOTA', retryInSeconds: 2 }])
    const other = await post('/orders')
    expect(other.status).toBe(429)
    expect(other.headers.get('x-quota-reset')).toBeNull()
    expect(((await other.json()) as { error: { type: string } }).error.type).toBe('rate_limit_error')
  })
})
