import { describe, expect, it } from 'vitest'
import { parseStateUrl } from './state-url.js'

describe('parseStateUrl', () => {
  it('reads redis://, rediss:// and unix:// URLs and never shows the password', () => {
    expect(parseStateUrl('redis://127.0.0.1:6379/2')).toEqual({ shown: 'redis://127.0.0.1:6379/2', client: { url: 'redis://127.0.0.1:6379/2' }, tls: false })
    expect(parseStateUrl('rediss://:s3cret@redis.internal:6380')).toMatchObject({ shown: 'rediss://***@redis.internal:6380', tls: true })
    expect(parseStateUrl('unix:///run/redis/redis.sock?db=1')).toEqual({ shown: 'unix:///run/redis/redis.sock?db=1', client: { socket: { path: '/run/redis/redis.sock' }, database: 1 }, tls: false })
    expect(parseStateUrl('unix://:s3cret@/run/redis/redis.sock')).toEqual({ shown: 'unix://***@/run/redis/redis.sock', client: { socket: { path: '/run/redis/redis.sock' }, password: 's3cret' }, tls: false })
  })

  it('refuses what is not a Redis URL, naming the value and what was expected', () => {
    const expected = 'expected redis://HOST:PORT[/DB], rediss://HOST:PORT[/DB] or unix:///path/to/redis.sock[?db=N].'
    expect(() => parseStateUrl('redis-host:6379')).toThrow(`Failed to read --state: "redis-host:6379" uses redis-host; ${expected}`)
    expect(() => parseStateUrl('not a url')).toThrow(`Failed to read --state: "not a url" is not a URL; ${expected}`)
    expect(() => parseStateUrl('redis://:pw@h:1/zero')).toThrow(`Failed to read --state: the database "zero" in "redis://***@h:1/zero" is not a number; ${expected}`)
    expect(() => parseStateUrl('unix:///')).toThrow('names no socket path')
    expect(() => parseStateUrl('unix:///run/redis.sock?db=one')).toThrow('the database "one" in "unix:///run/redis.sock?db=one" is not a number')
    expect(() => parseStateUrl('redis+unix:///run/redis.sock')).toThrow('Failed to read --state: "redis+unix:///run/redis.sock": write a unix socket as unix:///path/to/redis.sock[?db=N] (the form node-redis reads).')
    expect(() => parseStateUrl('nope')).toThrow(expect.objectContaining({ code: 'ERR_USAGE' }))
  })
})
