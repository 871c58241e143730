import { randomBytes } from 'node:crypto'
import zlib from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { defaultRedactor as redactor } from '../../redact/index.js'
import { captureBytes } from './body-capture.js'
import { storeBody, storedBodyBytes } from './store-body.js'

const store = (bytes: Buffer, options: { contentType?: string; contentEncoding?: string; limit?: number } = {}) =>
  storeBody(captureBytes(bytes, options.limit ?? 1024), { contentType: options.contentType, contentEncoding: options.contentEncoding, limit: options.limit ?? 1024, redactor })

describe('stored bodies', () => {
  it('stores UTF-8 text as text and binary as base64, byte for byte', async () => {
    const text = Buffer.from('héllo, wörld ✓\n')
    expect(await store(text)).toEqual({ encoding: 'utf8', data: text.toString(), size: text.length, truncated: false })
    const binary = randomBytes(512)
    binary[0] = 0
    const stored = await store(binary)
    expect(stored?.encoding).toBe('base64')
    expect(storedBodyBytes(stored)).toEqual(binary)
  })

  it('stores nothing for an empty body', async () => {
    expect(await store(Buffer.alloc(0))).toBeNull()
  })

  it('keeps a prefix of a long body, cut on a character boundary, and marks it truncated', async () => {
    const text = Buffer.from('€'.repeat(400))
    const stored = await store(text, { limit: 100 })
    expect(stored).toMatchObject({ encoding: 'utf8', truncated: true, size: 1200 })
    expect(Buffer.byteLength(stored!.data)).toBeLessThanOrEqual(100)
    expect(stored!.data).toBe('€'.repeat(33))
  })

  it('decodes gzip so it can redact, and says so', async () => {
    const plain = JSON.stringify({ password: 'hunter2-hunter2', ok: true })
    const stored = await store(zlib.gzipSync(plain), { contentType: 'application/json', contentEncoding: 'gzip' })
    expect(stored).toMatchObject({ encoding: 'utf8', decoded: 'gzip', truncated: false, data: '{"password":"[REDACTED]","ok":true}' })
  })

  it('redacts a credential shape inside a binary body without touching other bytes', async () => {
    const token = 'gh' + 'p_' + randomBytes(27).toString('base64').replace(/[^A-Za-z0-9]/g, 'x').slice(0, 36)
    const binary = Buffer.concat([Buffer.from([0, 1, 2, 255]), Buffer.from(` ${token} `), Buffer.from([0, 254])])
    const stored = await store(binary)
    const bytes = storedBodyBytes(stored)
    expect(bytes.includes(Buffer.from(token))).toBe(false)
    expect(bytes.subarray(0, 4)).toEqual(Buffer.from([0, 1, 2, 255]))
    // Masked byte for byte: the body keeps its length and every other byte.
    expect(bytes.length).toBe(binary.length)
    expect(bytes.toString('latin1')).toBe(binary.toString('latin1').replace(token, '[REDACTED]' + '*'.repeat(token.length - 10)))
  })

  it('keeps random binary bytes that happen to read as a secret-name assignment byte for byte', async () => {
    // Found in a random 3 MiB body: "~S.PWD:Wp!" reads as `pwd: value` to a text scan, which
    // rewrote it, so the replayed body was no longer the recorded one (issue #28).
    const binary = Buffer.concat([randomBytes(64), Buffer.from([0x1b, 0x7e]), Buffer.from('S.PWD:Wp!'), Buffer.from([0xfa, 0xce, 0x02]), randomBytes(64), Buffer.from([0]), Buffer.from('x_sig=Qz'), Buffer.from([0xff])])
    const stored = await store(binary)
    expect(storedBodyBytes(stored)).toEqual(binary)
  })
})
