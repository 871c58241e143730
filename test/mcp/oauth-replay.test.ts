/**
 * An MCP client's OAuth flow through record and replay (#37, item 3), with the official TypeScript
 * SDK's client (`authProvider`) against an OAuth-protected SDK server. It runs in forward mode:
 * the resource metadata names the server's own URL, which the client checks (RFC 9728), and the
 * authorization server's URLs, which the client must reach through the proxy too.
 *
 * What it needs from toolstorm: discovery documents recorded whole (their endpoints and method
 * lists are no secrets; the tokens are), the `WWW-Authenticate` challenge's `resource_metadata`
 * kept, the token request's code and PKCE `code_verifier` redacted (so they match whatever the
 * run sent), the authorization request matched without `state` and `code_challenge`
 * (`--ignore-query`), and the redirect giving back the live `state`, which the app checks.
 */
import { randomBytes } from 'node:crypto'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { UnauthorizedError, type OAuthClientProvider, type OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { fetch as undiciFetch, ProxyAgent } from 'undici'
import { describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { storedBodyBytes } from '../../src/cassette/format/store-body.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { REDACTED } from '../../src/redact/index.js'
import path from 'node:path'
import { runCli } from '../helpers/cli.js'
import { startOAuthMcpServer } from '../helpers/oauth-mcp-server.js'
import { PYTHON, PYTHON_MCP_CLIENT, hasPythonModules, printedJson } from '../helpers/python.js'
import { closing, temporaryFolder } from '../helpers/teardown.js'

const REDIRECT = 'http://127.0.0.1:1/oauth/callback'
/** What changes every authorization: PKCE's challenge and verifier, and the state. */
const PKCE_MATCH = { ignoreQuery: ['state', 'code_challenge'], ignoreBodyFields: ['code_verifier'] }

/** The agent's OAuth client state, in memory; its "browser" follows the authorization request and checks the state it gets back. */
class AgentOAuth implements OAuthClientProvider {
  #client: OAuthClientInformationMixed | undefined
  #tokens: OAuthTokens | undefined
  #verifier = ''
  #state = ''
  #discovery: OAuthDiscoveryState | undefined
  code: string | null = null
  readonly #fetch: typeof fetch

  constructor(fetchFn: typeof fetch) {
    this.#fetch = fetchFn
  }

  get redirectUrl(): string {
    return REDIRECT
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }
  }

  state(): string {
    return (this.#state = randomBytes(16).toString('base64url'))
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.#client
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.#client = information
  }

  tokens(): OAuthTokens | undefined {
    return this.#tokens
  }

  saveTokens(tokens: OAuthTokens): void {
    this.#tokens = tokens
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier
  }

  codeVerifier(): string {
    return this.#verifier
  }

  // Where the 401's challenge pointed: the second transport (after the redirect) knows it only from here.
  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.#discovery = state
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.#discovery
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    // Consent is given at once: the authorization server redirects back to the app's callback.
    const answer = await this.#fetch(url, { redirect: 'manual' })
    const back = new URL(answer.headers.get('location') ?? 'about:blank')
    if (back.searchParams.get('state') !== this.#state) throw new Error(`the callback got state ${back.searchParams.get('state')}, not the ${this.#state} it sent`)
    this.code = back.searchParams.get('code')
  }
}

/** Connect (401), authorize, connect again with the token and call the tool: the result, and the tokens the client holds. */
async function authorizeAndCall(url: string, proxyUrl: string): Promise<{ result: unknown; tokens: OAuthTokens | undefined }> {
  const agent = new ProxyAgent({ uri: proxyUrl, proxyTunnel: false })
  try {
    const fetchFn = ((input: string | URL, init?: RequestInit) => undiciFetch(input, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch
    const oauth = new AgentOAuth(fetchFn)
    await expect(new Client({ name: 'agent', version: '1.0.0' }).connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: oauth, fetch: fetchFn }))).rejects.toThrow(UnauthorizedError)
    const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: oauth, fetch: fetchFn })
    await transport.finishAuth(oauth.code as string)
    const client = new Client({ name: 'agent', version: '1.0.0' })
    await client.connect(transport)
    const result = await client.callTool({ name: 'read_notes', arguments: {} })
    await client.close()
    return { result, tokens: oauth.tokens() }
  } finally {
    await agent.close()
  }
}

async function record(): Promise<{ cassette: Cassette; server: Awaited<ReturnType<typeof startOAuthMcpServer>>; result: unknown; accessToken: string }> {
  const server = await startOAuthMcpServer()
  const storm = createStorm({})
  const recorder = createCassetteRecorder(storm, { match: PKCE_MATCH })
  const proxy = await startProxy({ storm, observer: recorder.observer })
  const { result, tokens } = await authorizeAndCall(server.url, proxy.url)
  await proxy.close()
  await recorder.close()
  return { cassette: await recorder.cassette(), server, result, accessToken: tokens?.access_token ?? '' }
}

function answerOf(cassette: Cassette, path: string): string {
  const exchange = cassette.exchanges.find((candidate) => new URL(candidate.request.url).pathname === path)
  if (!exchange?.response) throw new Error(`no answer to ${path} in the cassette`)
  return exchange.response.body ? storedBodyBytes(exchange.response.body).toString('utf8') : ''
}

describe('MCP OAuth in record and replay (forward mode)', () => {
  it('records discovery documents whole and the tokens redacted, and replays the whole flow to the SDK client with no server reached', async () => {
    const recorded = await record()
    expect(recorded.result).toEqual({ content: [{ type: 'text', text: 'private notes' }] })
    const cassette = recorded.cassette
    expect(JSON.parse(answerOf(cassette, '/custom/oauth/resource.json'))).toMatchObject({ authorization_servers: [recorded.server.issuer] })
    expect(JSON.parse(answerOf(cassette, '/.well-known/oauth-authorization-server'))).toMatchObject({ token_endpoint: `${recorded.server.issuer}/token`, token_endpoint_auth_methods_supported: ['none'] })
    expect(JSON.parse(answerOf(cassette, '/token'))).toMatchObject({ access_token: REDACTED, refresh_token: REDACTED, token_type: 'Bearer' })
    const unauthorized = cassette.exchanges.find((exchange) => exchange.response?.status === 401)
    expect(unauthorized?.response?.headers['www-authenticate']).toContain('resource_metadata="http://127.0.0.1:')
    expect(JSON.stringify(cassette.exchanges)).not.toContain(recorded.accessToken)

    const asked = recorded.server.asked.length
    const replay = closing(await startReplayServer(cassette))
    const replayed = await authorizeAndCall(recorded.server.url, replay.url)
    expect(replayed.result).toEqual(recorded.result)
    expect(replayed.tokens?.access_token).toBe(REDACTED)
    expect(replay.verdict()).toMatchObject({ passed: true, served: cassette.exchanges.length })
    expect(recorded.server.asked.length).toBe(asked)
  })

  it('replays the token request without ignoring code_verifier: the verifier and the code are redacted, so they match and no cassette or verdict holds them', async () => {
    const { cassette, server } = await record()
    const token = cassette.exchanges.find((exchange) => new URL(exchange.request.url).pathname === '/token')
    expect(token?.request.body?.data).toMatch(/(^|&)code=\[REDACTED\](&|$)/)
    expect(token?.request.body?.data).toMatch(/(^|&)code_verifier=\[REDACTED\](&|$)/)
    const replay = closing(await startReplayServer(cassette, { match: { ignoreBodyFields: [] } }))
    await authorizeAndCall(server.url, replay.url)
    expect(replay.verdict()).toMatchObject({ passed: true, served: cassette.exchanges.length })
  })
})

describe.skipIf(!hasPythonModules('mcp'))('MCP OAuth in record and replay, with the Python SDK client (toolstorm record / replay, forward mode)', () => {
  it('replays the flow to the Python client, which checks the state its redirect gives back', async () => {
    const server = await startOAuthMcpServer()
    const file = path.join(await temporaryFolder('toolstorm-oauth-'), 'oauth.cassette.jsonl')
    const pkce = ['--ignore-query', 'state', '--ignore-query', 'code_challenge', '--ignore-body-field', 'code_verifier']
    const recorded = await runCli(['record', file, '--port', '0', '--admin-port', '0', ...pkce, '--', PYTHON, PYTHON_MCP_CLIENT, 'oauth', server.url])
    expect(recorded.code, recorded.stderr).toBe(0)
    const live = printedJson<{ result: string; access_token: string }>(recorded.stdout)
    expect(live.result).toBe('private notes')
    const cassette = await Cassette.load(file)
    expect(JSON.stringify(cassette.exchanges)).not.toContain(live.access_token)
    const asked = server.asked.length
    const replayed = await runCli(['replay', file, '--port', '0', '--admin-port', '0', '--', PYTHON, PYTHON_MCP_CLIENT, 'oauth', server.url])
    expect(replayed.code, replayed.stderr).toBe(0)
    expect(printedJson(replayed.stdout)).toEqual({ result: 'private notes', access_token: REDACTED })
    expect(replayed.stderr).toContain(`Replayed ${cassette.exchanges.length} of ${cassette.exchanges.length} exchange(s)`)
    expect(server.asked.length).toBe(asked)
  }, 90_000)
})
