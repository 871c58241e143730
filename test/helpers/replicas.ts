/**
 * The setting of the shared-state tests: before each test a fresh redis-server and upstream;
 * after it, the proxies the test started, the upstream and Redis are closed.
 */
import { afterEach, beforeEach } from 'vitest'
import type { ProxyServer } from '../../src/proxy/proxy-server.js'
import { hasRedis, startRedis, type RedisServer } from './redis-server.js'
import { startUpstream, type Upstream } from './upstream.js'

export interface ReplicaSetting {
  redis: RedisServer | null
  upstream: Upstream | null
  /** Proxies to close after the test. */
  readonly proxies: ProxyServer[]
}

export function useReplicaSetting(): ReplicaSetting {
  const setting: ReplicaSetting = { redis: null, upstream: null, proxies: [] }
  beforeEach(async () => {
    if (!hasRedis) return
    setting.redis = await startRedis()
    setting.upstream = await startUpstream()
  })
  afterEach(async () => {
    for (const proxy of setting.proxies.splice(0)) await proxy.close()
    await setting.upstream?.close()
    await setting.redis?.close()
    setting.upstream = null
    setting.redis = null
  })
  return setting
}
