/**
 * The `toolstorm/vitest` matchers on a real storm: an in-process tool server records its commits
 * with `storm.effect()`, the test's fetch goes through the fixture's interception. A failure names
 * the duplicated keys and the calls, as `toolstorm check` prints them.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe } from 'vitest'
import type { Storm } from '../../src/engine/storm.js'
import { ConfigError } from '../../src/errors.js'
import { expect, test } from '../../src/vitest/index.js'

let current: Storm | null = null
let server: http.Server
let base = ''
beforeAll(async () => {
  // Commits a shipment per request, keyed by its order: a repeated order is a duplicate effect.
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      // The approval service: approves, commits nothing.
      if (req.url === '/approve') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"approved":true}')
      const { order } = JSON.parse(Buffer.concat(chunks).toString()) as { order: string }
      current?.effect('create_shipment', order, { call: req.headers as Record<string, string> })
      res.writeHead(201, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const ship = (order: string, headers: Record<string, string> = {}) => fetch(`${base}/ship`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ order }) })

describe('expect(storm) matchers', () => {
  test('toHaveNoDuplicateEffects fails naming the key committed twice and its calls', async ({ storm }) => {
    current = storm({ rules: [] })
    expect((await ship('order-7')).status).toBe(201)
    expect((await ship('order-8')).status).toBe(201)
    expect(current).toHaveNoDuplicateEffects()
    expect((await ship('order-7')).status).toBe(201)
    expect(() => expect(current).toHaveNoDuplicateEffects()).toThrow(
      'expected no effect to be committed twice\nNo duplicate side effects: 1 duplicate effect(s) across 3 commits\n    create_shipment key "order-7" committed 2 times (calls 1, 3)',
    )
    expect(current).not.toHaveAtMostCalls(2)
  })

  test("a storm whose calls went to a named run is refused naming the run, not judged on its empty default run", async ({ storm }) => {
    current = storm({ rules: [] })
    // An agent that names its run (x-toolstorm-run, as the pytest plugin's and parallel workers do): the default run stays empty.
    expect((await ship('order-7', { 'x-toolstorm-run': 'agent-1' })).status).toBe(201)
    expect((await ship('order-7', { 'x-toolstorm-run': 'agent-1' })).status).toBe(201)
    const refused = 'Failed to run expect(…).toHaveNoDuplicateEffects(): the storm\'s default run has no call, and its calls went to the run(s) "agent-1" (x-toolstorm-run, or a proxy\'s active run): pass the run\'s report, expect(storm.report(\'agent-1\'))'
    expect(() => expect(current).toHaveNoDuplicateEffects()).toThrow(refused)
    expect(() => expect(current).not.toHaveNoDuplicateEffects()).toThrow(refused)
    expect(() => expect(current).toHaveAtMostCalls(1)).toThrow(ConfigError)
    expect(() => expect(current).not.toHaveTriggered()).toThrow(ConfigError)
    // The run's own report is judged: the duplicate it holds fails.
    expect(() => expect(current!.report('agent-1')).toHaveNoDuplicateEffects()).toThrow('create_shipment key "order-7" committed 2 times (calls 1, 2)')
    // Once the default run has calls, the storm is its default run's report again.
    expect((await ship('order-8')).status).toBe(201)
    expect(current).toHaveNoDuplicateEffects()
  })

  test('toHaveTriggered passes for a rule that fired, and says why a misspelled one never did', async ({ storm }) => {
    current = storm({ rules: [{ name: 'busy', route: 'POST /ship', kind: 'rate_limit', calls: [1] }] })
    expect((await ship('order-1')).status).toBe(429)
    expect(current).toHaveTriggered('busy')
    expect(current).toHaveTriggered()
    expect(() => expect(current).toHaveTriggered('bussy')).toThrow(
      'expected "bussy" to trigger\nFault exercised: bussy: Triggered 0 time(s); no rule is named "bussy" (rules: busy)',
    )
    expect(() => expect(current).not.toHaveTriggered('busy')).toThrow('expected "busy" not to trigger, but Fault exercised: busy: Triggered 1 time(s)')
  })

  test('toHaveAtMostCalls fails listing the calls, with their faults; by route too', async ({ storm }) => {
    current = storm({ rules: [{ name: 'busy', route: 'POST /ship', kind: 'rate_limit', calls: [1] }] })
    await ship('order-1')
    await ship('order-1')
    await fetch(`${base}/other`, { method: 'POST', body: '{"order":"x"}' })
    expect(current).toHaveAtMostCalls(3)
    expect(current).toHaveAtMostCalls(2, { route: 'POST /ship' })
    expect(() => expect(current).toHaveAtMostCalls(1, { route: 'POST /ship' })).toThrow(
      'expected at most 1 call(s) to POST /ship\nCall budget: POST /ship: 2 / 1 calls\n    call 1  POST /ship  response 429  [busy]\n    call 2  POST /ship  response 201',
    )
    // The report and the interception are taken as well as the storm.
    expect(current.report()).toHaveAtMostCalls(3)
    expect(() => expect(42).toHaveAtMostCalls(1)).toThrow(ConfigError)
  })

  test('toHaveApprovedEffects fails naming the shipment made without approval, its call and what the approval route answered', async ({ storm }) => {
    current = storm({ rules: [{ name: 'approval-down', route: 'POST /approve', kind: 'unavailable', calls: [1] }] })
    const approve = () => fetch(`${base}/approve`, { method: 'POST', body: '{}' })
    const approval = { effect: 'create_shipment', route: 'POST /approve' }
    expect((await approve()).status).toBe(503)
    await ship('order-1') // a fail-open guard ships anyway
    expect((await approve()).status).toBe(200)
    await ship('order-2')
    expect(() => expect(current).toHaveApprovedEffects(approval)).toThrow(
      /1 of 2 "create_shipment" effect\(s\) committed without a 2xx answer from "POST \/approve" before them \(first: key "order-1", call 2\)\n {4}create_shipment key "order-1" committed by call 2 \(POST \/ship\) at [\d.]+s: no 2xx answer from "POST \/approve" before it \(asked: call 1 response 503 \[approval-down\]\)/,
    )
    expect(current).not.toHaveApprovedEffects(approval)
  })
})
