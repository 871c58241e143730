import { describe, expect, it } from 'vitest'
import { parseConnectTarget } from './connect-target.js'

describe('parseConnectTarget', () => {
  it.each([
    ['api.openai.com:443', { host: 'api.openai.com', port: 443, authority: 'api.openai.com:443' }],
    ['API.Example.COM.:8443', { host: 'api.example.com', port: 8443, authority: 'api.example.com:8443' }],
    ['127.0.0.1:443', { host: '127.0.0.1', port: 443, authority: '127.0.0.1:443' }],
    ['[::1]:443', { host: '::1', port: 443, authority: '[::1]:443' }],
    ['[2001:DB8::1]:8443', { host: '2001:db8::1', port: 8443, authority: '[2001:db8::1]:8443' }],
    ['svc_internal.local:443', { host: 'svc_internal.local', port: 443, authority: 'svc_internal.local:443' }],
  ])('parses %s', (input, expected) => {
    expect(parseConnectTarget(input)).toEqual(expected)
  })

  it.each(['api.openai.com', 'api.openai.com:', ':443', 'host:0', 'host:65536', 'host:44x', 'user@host:443', 'host/path:443', '[::1:443', '[nothex]:443', '::1:443', 'a..b:443', '-a.com:443', 'a b:443', ''])(
    'refuses %j',
    (input) => {
      expect(parseConnectTarget(input)).toBeNull()
    },
  )
})
