import { describe, expect, it } from 'vitest'
import { openaiDuration, providerError } from './provider-errors.js'

const view = (url: string, headers: Record<string, string> = {}) => ({ method: 'POST', url, headers })

describe('providerError', () => {
  it('writes durations as OpenAI reset headers do', () => {
    expect([0.12, 1, 1.5, 59.25, 60, 360, 61.5].map(openaiDuration)).toEqual(['120ms', '1s', '1.5s', '59.25s', '1m0s', '6m0s', '1m1.5s'])
  })

  it('answers only recognised model calls, by their provider', () => {
    const identity = [1, 'r', 'route', '#1']
    expect(providerError(view('http://x/v1/embeddings'), 'rate_limit', { identity })).toBeNull()
    expect(providerError(view('http://x/v1/chat/completions'), 'overloaded', { identity })?.status).toBe(503)
    expect(providerError(view('http://x/v1/messages'), 'overloaded', { identity })?.status).toBe(529)
    expect(providerError(view('http://x/messages', { 'anthropic-version': '2023-06-01' }), 'unavailable', { identity })?.status).toBe(503)
  })

  it('derives the request id from its identity, so a seed gives the same ids', () => {
    const id = (identity: unknown[]) => providerError(view('http://x/v1/responses'), 'timeout', { identity })?.headers['x-request-id']
    expect(id([1, 'r', 'route', '#1'])).toBe(id([1, 'r', 'route', '#1']))
    expect(id([1, 'r', 'route', '#1'])).not.toBe(id([1, 'r', 'route', '#2']))
  })

  it('reports a token budget with its figures', () => {
    const answer = providerError(view('http://x/v1/chat/completions'), 'rate_limit', {
      identity: [],
      retryAfter: 12.5,
      exceeded: 'tokens',
      tokens: { limit: 1000, remaining: 0, resetSeconds: 30 },
      requests: { limit: 10, remaining: 7, resetSeconds: 40 },
    })!
    expect(answer.headers).toMatchObject({ 'x-ratelimit-limit-tokens': '1000', 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': '30s', 'x-ratelimit-remaining-requests': '7', 'retry-after': '13', 'retry-after-ms': '12500' })
    expect(JSON.parse(new TextDecoder().decode(answer.body))).toEqual({
      error: { message: 'Rate limit reached on tokens per min (TPM): Limit 1000, Used 1000, Requested 1. Please try again in 12.5s.', type: 'tokens', param: null, code: 'rate_limit_exceeded' },
    })
  })
})
