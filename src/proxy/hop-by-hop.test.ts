import { describe, expect, it } from 'vitest'
import { endToEndHeaders } from './hop-by-hop.js'

describe('hop-by-hop headers', () => {
  it('drops the RFC 9110 list and the headers Connection names', () => {
    const out = endToEndHeaders({ connection: 'close, x-hop', 'x-hop': '1', 'keep-alive': 'timeout=5', te: 'trailers', 'transfer-encoding': 'chunked', upgrade: 'h2c', 'proxy-authorization': 'Basic x', 'x-kept': 'yes', 'set-cookie': ['a=1', 'b=2'] })
    expect(out).toEqual({ 'x-kept': 'yes', 'set-cookie': ['a=1', 'b=2'] })
  })

  it('drops the extra names it is given and keeps everything else', () => {
    expect(endToEndHeaders({ connection: 'keep-alive', host: 'x', accept: '*/*', 'x-toolstorm-run': 'r' }, ['host', 'x-toolstorm-run'])).toEqual({ accept: '*/*' })
  })
})
