/**
 * A run's claim list in a real Redis: an OTLP export's claims go in one push, and the list stays
 * within 10,000 claims (the first ones kept), as one process keeps them.
 */
import { createClient } from 'redis'
import { describe, expect, it } from 'vitest'
import { MAX_CLAIMS, type StoredClaim } from '../../src/engine/run-claims.js'
import { RedisClaimLog } from '../../src/state/redis-claims.js'
import { hasRedis, startRedis } from '../helpers/redis-server.js'

const claim = (tool: string): Omit<StoredClaim, 'id'> => ({ tool, toolCallId: null, status: 'success', source: 'otlp', traceId: null, spanId: null, at: 0, upTo: 0, after: 0 })

describe.skipIf(!hasRedis)('RedisClaimLog', () => {
  it('keeps an export\'s claims in one push, those past 10,000 refused: the first ones stay, in order', async () => {
    const redis = await startRedis()
    const client = createClient({ url: redis.url })
    try {
      await client.connect()
      const log = new RedisClaimLog({ connection: client, ttlMs: 60_000, command: (send) => send() })
      expect(await log.addAll('run:claims', [claim('a'), claim('b')])).toBe(2)
      await client.rPush('run:claims', Array.from({ length: MAX_CLAIMS - 3 }, () => JSON.stringify(claim('filler'))))
      expect(await log.addAll('run:claims', [claim('last'), claim('over-1'), claim('over-2')])).toBe(1)
      const kept = await log.read('run:claims')
      expect(kept.size).toBe(MAX_CLAIMS)
      expect([kept.claims[0]?.tool, kept.claims[1]?.tool, kept.claims.at(-1)?.tool]).toEqual(['a', 'b', 'last'])
      expect(await client.pTTL('run:claims')).toBeGreaterThan(0)
    } finally {
      await client.quit()
      await redis.close()
    }
  })
})
