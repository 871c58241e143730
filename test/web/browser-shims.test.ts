import { createHash as nodeCreateHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { ShimBuffer } from '../../web/shims/buffer.js'
import { createHash, randomBytes } from '../../web/shims/node-crypto.js'
import { channel } from '../../web/shims/node-diagnostics-channel.js'
import { AsyncLocalStorage } from '../../web/shims/node-async-hooks.js'

describe('the browser build’s shims for Node built-ins', () => {
  it('hash like node:crypto (the decision digests and report digests depend on it)', () => {
    for (const text of ['', '[42,"lost-receipt","create_shipment","#1"]', 'ünïcödé ✓ 🚀'.repeat(50)]) {
      expect(createHash('sha256').update(text, 'utf8').digest('hex')).toBe(nodeCreateHash('sha256').update(text, 'utf8').digest('hex'))
      expect(createHash('sha256').update(text).digest().readBigUInt64BE(0)).toBe(nodeCreateHash('sha256').update(text).digest().readBigUInt64BE(0))
    }
    expect(() => createHash('md5')).toThrow('Failed to hash in the browser: only sha256 is available, not "md5".')
  })

  it('encode and decode like Buffer for what the engine uses', () => {
    const bytes = randomBytes(70_000)
    expect(bytes).toHaveLength(70_000)
    expect(bytes.toString('base64url', 10, 16)).toBe(Buffer.from(bytes).toString('base64url', 10, 16))
    expect(bytes.toString('hex', 0, 4)).toBe(Buffer.from(bytes).toString('hex', 0, 4))
    for (const encoded of ['c2stbGl2ZS1hYmNkZWZnaGlqa2xtbm9w', 'c2stbGl2ZS1hYmNkZWZnaGlqa2xtbm9', 'a-b_c+d/e==', 'not base64 at all!']) {
      expect([...ShimBuffer.from(encoded, 'base64')]).toEqual([...Buffer.from(encoded, 'base64')])
    }
    const text = 'héllo, wörld'
    expect(ShimBuffer.from(text).toString('utf8')).toBe(text)
    expect(ShimBuffer.from(text).toString('base64')).toBe(Buffer.from(text).toString('base64'))
    const joined = ShimBuffer.concat([new Uint8Array([1, 2]), ShimBuffer.from([3])])
    expect([...joined]).toEqual([1, 2, 3])
    expect(ShimBuffer.isBuffer(joined)).toBe(true)
    expect(ShimBuffer.isBuffer(new Uint8Array(1))).toBe(false)
  })

  it('publish on named channels and keep a synchronous store', () => {
    const seen: unknown[] = []
    const listener = (message: unknown) => seen.push(message)
    const events = channel('toolstorm:test')
    expect(events).toBe(channel('toolstorm:test'))
    expect(events.hasSubscribers).toBe(false)
    events.subscribe(listener)
    events.publish({ run: 'a' })
    events.unsubscribe(listener)
    events.publish({ run: 'b' })
    expect(seen).toEqual([{ run: 'a' }])
    const storage = new AsyncLocalStorage<string>()
    expect(storage.run('inside', () => storage.getStore())).toBe('inside')
    expect(storage.getStore()).toBeUndefined()
  })
})
