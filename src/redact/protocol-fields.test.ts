import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createRedactor, defaultRedactor as redactor, REDACTED } from './index.js'

/** A credential with no recognisable shape: only its name can tell it is one. */
const shapeless = (): string => randomBytes(24).toString('hex')

describe('protocol fields that only look like secrets', () => {
  it('keeps MCP progress tokens, in the request and in every progress notification, and cursors', () => {
    const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'sync', arguments: {}, _meta: { progressToken: 7 } } }
    expect(redactor.json(call)).toEqual(call)
    const progress = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p-7', progress: 1, total: 4 } })}\n\n`
    expect(redactor.body(progress, 'text/event-stream')).toBe(progress)
    const page = { jsonrpc: '2.0', id: 2, result: { tools: [], nextCursor: 'eyJwYWdlIjoyfQ' } }
    expect(redactor.json(page)).toEqual(page)
    expect(redactor.json({ params: { cursor: 'eyJwYWdlIjoyfQ' } })).toEqual({ params: { cursor: 'eyJwYWdlIjoyfQ' } })
  })

  it('keeps token counts of model usage and the token type of an OAuth answer', () => {
    const usage = { max_tokens: 100, max_completion_tokens: 50, usage: { input_tokens: 12, output_tokens: 7, cache_read_input_tokens: 3, prompt_tokens_details: { cached_tokens: 2 }, tokens: 19, total_token_count: 19 }, token_type: 'Bearer' }
    expect(redactor.json(usage)).toEqual(usage)
  })

  it('keeps OAuth discovery documents (RFC 9728, RFC 8414, OpenID) and a registration answer whole, except their credentials', () => {
    const resource = { resource: 'http://127.0.0.1:4000/mcp', authorization_servers: ['http://127.0.0.1:4001'], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] }
    expect(redactor.json(resource)).toEqual(resource)
    const server = {
      issuer: 'http://127.0.0.1:4001',
      authorization_endpoint: 'http://127.0.0.1:4001/authorize',
      token_endpoint: 'http://127.0.0.1:4001/token',
      registration_endpoint: 'http://127.0.0.1:4001/register',
      revocation_endpoint: 'http://127.0.0.1:4001/revoke',
      end_session_endpoint: 'http://127.0.0.1:4001/logout',
      response_types_supported: ['code'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_post'],
      token_endpoint_auth_signing_alg_values_supported: ['RS256'],
      id_token_signing_alg_values_supported: ['RS256'],
      authorization_response_iss_parameter_supported: true,
      require_pushed_authorization_requests: false,
    }
    expect(redactor.json(server)).toEqual(server)
    const secret = shapeless()
    const registration = { client_id: 'c-1', client_secret: secret, client_secret_expires_at: 0, token_endpoint_auth_method: 'client_secret_post', registration_access_token: shapeless() }
    expect(redactor.json(registration)).toEqual({ ...registration, client_secret: REDACTED, registration_access_token: REDACTED })
  })

  it('keeps the auth-params of a WWW-Authenticate challenge (resource_metadata, RFC 9728), and still redacts a credential in one', () => {
    const challenge = 'Bearer error="invalid_token", resource_metadata="http://127.0.0.1:4000/custom/prm.json", scope="mcp"'
    expect(redactor.headers({ 'WWW-Authenticate': challenge })).toEqual({ 'WWW-Authenticate': challenge })
    const token = 'eyJhbGciOiJIUzI1NiJ9.' + Buffer.from(JSON.stringify({ sub: shapeless() })).toString('base64url') + '.' + shapeless()
    expect(redactor.headers({ 'www-authenticate': [`Bearer ${token}`, `Bearer realm="x", password=${shapeless()}`] })).toEqual({ 'www-authenticate': [`Bearer ${REDACTED}`, `Bearer realm="x", password=${REDACTED}`] })
  })

  it('still redacts every credential of a token answer and of a login form, whatever its shape', () => {
    const answer = { access_token: shapeless(), refresh_token: shapeless(), id_token: shapeless(), token_type: 'Bearer', expires_in: 3600, scope: 'mcp' }
    expect(redactor.json(answer)).toEqual({ ...answer, access_token: REDACTED, refresh_token: REDACTED, id_token: REDACTED })
    const password = shapeless()
    expect(redactor.body(`grant_type=password&username=ann&password=${password}&client_secret=${shapeless()}`, 'application/x-www-form-urlencoded')).toBe(`grant_type=password&username=ann&password=${REDACTED}&client_secret=${REDACTED}`)
    for (const name of ['token', 'session_token', 'aws_secret_access_key', 'x-auth-token', 'Mcp-Session-Id', 'authorization', 'proxy-authorization', 'auth_token', 'csrf_token']) {
      expect(redactor.json({ [name]: shapeless() }), name).toEqual({ [name]: REDACTED })
    }
  })

  it('redacts a protocol field again when the user names it among the secret keys', () => {
    const own = createRedactor({ keys: ['progressToken', 'token_endpoint'] })
    expect(own.json({ _meta: { progressToken: 'p-1' }, token_endpoint: 'http://a/token', authorization_endpoint: 'http://a/authorize' })).toEqual({ _meta: { progressToken: REDACTED }, token_endpoint: REDACTED, authorization_endpoint: 'http://a/authorize' })
  })
})
