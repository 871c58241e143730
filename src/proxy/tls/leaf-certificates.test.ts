import { describe, expect, it } from 'vitest'
import { createInMemoryCertificateAuthority } from './certificate-authority.js'
import { LeafCertificates } from './leaf-certificates.js'

describe('LeafCertificates', () => {
  it('makes a leaf once per host and serves it from memory afterwards', async () => {
    const leaves = new LeafCertificates(await createInMemoryCertificateAuthority())
    const [a, b] = await Promise.all([leaves.contextFor(['api.example.com']), leaves.contextFor(['API.example.com'])])
    expect(a).toBe(b)
    expect(await leaves.contextFor(['api.example.com'])).toBe(a)
    expect(await leaves.contextFor(['127.0.0.1'])).not.toBe(a)
    expect(leaves.size).toBe(2)
  })

  it('forgets the least recently used host beyond its bound', async () => {
    const leaves = new LeafCertificates(await createInMemoryCertificateAuthority(), { maxEntries: 2 })
    const a = await leaves.contextFor(['a.test'])
    await leaves.contextFor(['b.test'])
    expect(await leaves.contextFor(['a.test'])).toBe(a)
    await leaves.contextFor(['c.test'])
    expect(leaves.size).toBe(2)
    expect(await leaves.contextFor(['a.test'])).toBe(a)
    expect(leaves.size).toBe(2)
  })
})
