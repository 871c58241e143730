/**
 * The setting of the shared-state tests: around each test a fresh redis-server and upstream, closed
 * after everything the test itself closes with `closing()` (its proxies hold Redis connections).
 * An `aroundEach`, not a fixture or `beforeEach`: vitest runs `onTestFinished` inside it, after
 * fixture and hook cleanups, so this is the one place Redis can outlive the test's proxies.
 */
import { aroundEach } from 'vitest'
import { hasRedis, startRedis, type RedisServer } from './redis-server.js'
import { startUpstream, type Upstream } from './upstream.js'

export interface ReplicaSetting<U = Upstream> {
  redis: RedisServer | null
  upstream: U | null
}

/** The setting, with the tool-server upstream or the one `start` makes (a model upstream). */
export function useReplicaSetting(): ReplicaSetting
export function useReplicaSetting<U extends { close(): Promise<unknown> }>(start: () => Promise<U>): ReplicaSetting<U>
export function useReplicaSetting(start: () => Promise<{ close(): Promise<unknown> }> = startUpstream): ReplicaSetting<{ close(): Promise<unknown> }> {
  const setting: ReplicaSetting<{ close(): Promise<unknown> }> = { redis: null, upstream: null }
  aroundEach(async (runTest) => {
    if (!hasRedis) return runTest()
    const redis = (setting.redis = await startRedis())
    try {
      setting.upstream = await start()
      await runTest()
    } finally {
      await setting.upstream?.close()
      await redis.close()
      setting.upstream = null
      setting.redis = null
    }
  })
  return setting
}
