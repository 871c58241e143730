/**
 * An MCP server behind OAuth, as the MCP authorization spec has it, for tests: a resource server
 * (an SDK `McpServer` over Streamable HTTP that answers `401` with a `WWW-Authenticate` challenge
 * naming its Protected Resource Metadata, RFC 9728, at a custom path) and an authorization server
 * on another port (RFC 8414 metadata, dynamic client registration, the authorization endpoint that
 * redirects with a code and the client's `state`, and a token endpoint that checks PKCE S256).
 * Codes, client ids and tokens are new every run, as a real server mints them.
 */
import { createHash, randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { closingServer } from './teardown.js'

export interface OAuthMcpServer {
  /** The MCP endpoint. */
  readonly url: string
  /** The authorization server's issuer. */
  readonly issuer: string
  /** What the authorization server was asked, in order (`POST /token`, …). */
  readonly asked: string[]
}

const mint = (prefix: string) => `${prefix}${randomBytes(18).toString('base64url')}`

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => (text += chunk))
    req.on('end', () => resolve(text))
    req.on('error', reject)
  })
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers }).end(JSON.stringify(body))
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Start both servers (closed when the test finishes). */
export async function startOAuthMcpServer(): Promise<OAuthMcpServer> {
  const asked: string[] = []
  const codes = new Map<string, { challenge: string; clientId: string; redirectUri: string }>()
  const tokens = new Set<string>()
  let issuer = ''
  const authorization = closingServer(
    http.createServer((req, res) => {
      void (async () => {
        const url = new URL(req.url ?? '/', issuer)
        asked.push(`${req.method} ${url.pathname}`)
        if (req.method === 'GET' && url.pathname === '/.well-known/oauth-authorization-server') {
          return sendJson(res, 200, {
            issuer,
            authorization_endpoint: `${issuer}/authorize`,
            token_endpoint: `${issuer}/token`,
            registration_endpoint: `${issuer}/register`,
            response_types_supported: ['code'],
            grant_types_supported: ['authorization_code', 'refresh_token'],
            code_challenge_methods_supported: ['S256'],
            token_endpoint_auth_methods_supported: ['none'],
            scopes_supported: ['mcp'],
          })
        }
        if (req.method === 'POST' && url.pathname === '/register') {
          const metadata = JSON.parse(await readBody(req)) as Record<string, unknown>
          return sendJson(res, 201, { ...metadata, client_id: mint('client-'), client_id_issued_at: Math.floor(Date.now() / 1000), token_endpoint_auth_method: 'none' })
        }
        if (req.method === 'GET' && url.pathname === '/authorize') {
          const query = url.searchParams
          const redirect = new URL(query.get('redirect_uri') ?? '')
          if (query.get('code_challenge_method') !== 'S256' || !query.get('code_challenge')) return sendJson(res, 400, { error: 'invalid_request' })
          const code = mint('code-')
          codes.set(code, { challenge: query.get('code_challenge') as string, clientId: query.get('client_id') ?? '', redirectUri: redirect.href })
          redirect.searchParams.set('code', code)
          if (query.has('state')) redirect.searchParams.set('state', query.get('state') as string)
          res.writeHead(302, { location: redirect.href }).end()
          return
        }
        if (req.method === 'POST' && url.pathname === '/token') {
          const form = new URLSearchParams(await readBody(req))
          const grant = codes.get(form.get('code') ?? '')
          const verifier = form.get('code_verifier') ?? ''
          if (form.get('grant_type') !== 'authorization_code' || !grant || createHash('sha256').update(verifier).digest('base64url') !== grant.challenge || form.get('client_id') !== grant.clientId) {
            return sendJson(res, 400, { error: 'invalid_grant' })
          }
          codes.delete(form.get('code') as string)
          const token = mint('at-')
          tokens.add(token)
          return sendJson(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600, refresh_token: mint('rt-'), scope: 'mcp' })
        }
        sendJson(res, 404, { error: 'not_found' })
      })().catch(() => res.destroy())
    }),
  )
  issuer = await listen(authorization)

  let origin = ''
  const metadataPath = '/custom/oauth/resource.json'
  const resource = closingServer(
    http.createServer((req, res) => {
      if (req.method === 'GET' && req.url === metadataPath) {
        return sendJson(res, 200, { resource: `${origin}/mcp`, authorization_servers: [issuer], scopes_supported: ['mcp'], bearer_methods_supported: ['header'] })
      }
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1]
      if (!bearer || !tokens.has(bearer)) {
        return sendJson(res, 401, { error: 'invalid_token' }, { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${origin}${metadataPath}", scope="mcp"` })
      }
      const mcp = new McpServer({ name: 'notes', version: '1.0.0' })
      mcp.registerTool('read_notes', { description: 'Read the private notes' }, () => ({ content: [{ type: 'text', text: 'private notes' }] }))
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
      res.on('close', () => void transport.close())
      void mcp.connect(transport).then(() => transport.handleRequest(req, res))
    }),
  )
  origin = await listen(resource)
  return { url: `${origin}/mcp`, issuer, asked }
}
