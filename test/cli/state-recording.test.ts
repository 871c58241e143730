/**
 * Replicas recording through Redis (#40.7): those recording into a cassette of one name leave it to
 * the last of them to stop, which writes every run any of them recorded (one writer, not each), and
 * a run's lines in Redis are bounded by --state-run-bytes.
 */
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { startCliProxy } from '../helpers/cli-proxy.js'
import { test as it } from '../helpers/file-fixtures.js'
import { hasRedis, startRedis } from '../helpers/redis-server.js'
import { closing } from '../helpers/teardown.js'

/** A replica: `toolstorm proxy --target TARGET …`. */
const replica = (target: string, args: string[]) => startCliProxy(['--target', target, ...args])

const get = (base: string, p: string, run: string, body?: string) =>
  fetch(base + p, { method: body ? 'POST' : 'GET', headers: { 'x-toolstorm-run': run, 'content-type': 'application/json' }, ...(body ? { body } : {}) }).then((r) => r.arrayBuffer())

describe.skipIf(!hasRedis)('recording across replicas', { timeout: 120_000 }, () => {
  it('one replica writes the merged cassette: the first to stop leaves it to the last, which writes every replica\'s runs', async ({ dir, upstream }) => {
    const redis = closing(await startRedis())
    const state = ['--state', redis.url, '--state-prefix', 'one-writer']
    // Two hosts, one Deployment: the same --record path, each on its own disk.
    const [hostA, hostB] = [path.join(dir, 'host-a'), path.join(dir, 'host-b')]
    await mkdir(hostA)
    await mkdir(hostB)
    const a = await replica(upstream.url, [...state, '--record', path.join(hostA, 'staging.jsonl')])
    const b = await replica(upstream.url, [...state, '--record', path.join(hostB, 'staging.jsonl')])
    await get(a.url, '/items/1', 'shared')
    await get(b.url, '/items/2', 'shared')
    await get(a.url, '/items/3', 'only-a')
    await get(b.url, '/items/4', 'only-b')
    // No wait: a replica's stop makes the lines of the exchanges it answered and stores them before it leaves.

    const first = await a.stop()
    expect(first).toContain(`cassette not written here: 1 other replica(s) still record into ${path.join(hostA, 'staging.jsonl')} (by its name), and the last of them to stop writes every replica's runs into it`)
    await expect(Cassette.load(path.join(hostA, 'staging.jsonl'))).rejects.toMatchObject({ code: 'ERR_FILE_UNREADABLE' })
    const last = await b.stop()
    expect(last).toContain(`cassette written to ${path.join(hostB, 'staging.jsonl')}`)
    const cassette = await Cassette.load(path.join(hostB, 'staging.jsonl'))
    expect(cassette.exchanges.map((e) => [e.run, e.call, e.request.url])).toEqual(
      expect.arrayContaining([
        ['shared', 1, '/items/1'],
        ['shared', 2, '/items/2'],
        ['only-a', 1, '/items/3'],
        ['only-b', 1, '/items/4'],
      ]),
    )
    expect(cassette.exchanges).toHaveLength(4)
  })

  it('--incidents with --state: of replicas that both saw a failing run, exactly one keeps its incident', async ({ dir }) => {
    const redis = closing(await startRedis())
    const http = await import('node:http')
    const server = http.createServer((req, res) => res.writeHead(req.url === '/broken' ? 500 : 200, { 'content-type': 'application/json' }).end('{}'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const target = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`
    try {
      const state = ['--state', redis.url, '--state-prefix', 'incidents', '--run-idle', '0.3']
      const [dirA, dirB] = [path.join(dir, 'incidents-a'), path.join(dir, 'incidents-b')]
      const a = await replica(target, [...state, '--incidents', dirA])
      const b = await replica(target, [...state, '--incidents', dirB])
      await get(a.url, '/broken', 'bad-run')
      await get(b.url, '/broken', 'bad-run')
      const { readdir } = await import('node:fs/promises')
      const kept = async () => [...(await readdir(dirA).catch(() => [])), ...(await readdir(dirB).catch(() => []))].filter((name) => name.endsWith('.jsonl') && name !== 'index.jsonl')
      // The run goes idle (--run-idle 0.3) and the replica that claims it keeps its incident.
      await expect.poll(async () => (await kept()).length, { timeout: 10_000, interval: 25 }).toBeGreaterThanOrEqual(1)
      await a.stop()
      await b.stop()
      expect(await kept()).toHaveLength(1)
    } finally {
      server.closeAllConnections()
      server.close()
    }
  })

  it('bounds a run\'s recorded lines in Redis with --state-run-bytes, and says at stop how many were left out', async ({ dir, upstream }) => {
    const redis = closing(await startRedis())
    const file = path.join(dir, 'bounded.jsonl')
    const proxy = await replica(upstream.url, ['--state', redis.url, '--state-prefix', 'bounded', '--state-run-bytes', '64KiB', '--record', file])
    // 15 KB bodies (each line about 31 KB: the request and the upstream's echo): 10 of them are over 64 KiB.
    const body = JSON.stringify({ order: 'o', note: 'x'.repeat(15_000) })
    for (let i = 0; i < 10; i++) await get(proxy.url, '/ship', 'big', body)
    // No wait: the stop makes the lines of the exchanges answered and stores them before it writes the file.
    const stderr = await proxy.stop()
    const cassette = await Cassette.load(file)
    expect(cassette.exchanges.length).toBeGreaterThan(0)
    expect(cassette.exchanges.length).toBeLessThan(10)
    expect(stderr).toContain(`; ${10 - cassette.exchanges.length} exchanges were over the run's bound in Redis and are missing`)
  })
})
