/**
 * The fake-secret corpus: every credential shape, generated at test time with crypto-random
 * characters, injected into every carrier a cassette, report or log can hold. The source
 * holds prefixes split in two and charsets only, never a whole token.
 */
import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { REDACTED, defaultRedactor as redactor } from './index.js'

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
const LOWER = 'abcdefghijklmnopqrstuvwxyz'
const DIGITS = '0123456789'
const ALNUM = UPPER + LOWER + DIGITS
const ALNUM_DASH = ALNUM + '_-'
const HEX = '0123456789abcdef'
const BASE32 = UPPER + '234567'

/** `length` crypto-random characters from `charset`. */
function randomChars(length: number, charset: string): string {
  let out = ''
  for (let i = 0; i < length; i++) out += charset[randomInt(charset.length)]
  return out
}

/** Random characters with at least one digit, one lower and one upper case letter. */
function mixed(length: number, charset = ALNUM): string {
  return randomChars(1, DIGITS) + randomChars(1, LOWER) + randomChars(1, UPPER) + randomChars(length - 3, charset)
}

const base64url = (value: string | Buffer): string => Buffer.from(value).toString('base64url')

/** A fake credential: the text to inject and the parts that must never reach the output. */
interface FakeSecret {
  carried: string
  secrets: string[]
}

const whole = (token: string): FakeSecret => ({ carried: token, secrets: [token] })

const SHAPES: Record<string, () => FakeSecret> = {
  'AWS access key id': () => whole('AK' + 'IA' + randomChars(16, BASE32)),
  'AWS temporary access key id': () => whole('AS' + 'IA' + randomChars(16, BASE32)),
  'AWS Bedrock API key': () => whole('AB' + 'SK' + mixed(120, ALNUM + '+/')),
  'GitHub classic PAT': () => whole('gh' + 'p_' + mixed(36)),
  'GitHub OAuth token': () => whole('gh' + 'o_' + mixed(36)),
  'GitHub user-to-server token': () => whole('gh' + 'u_' + mixed(36)),
  'GitHub server-to-server token': () => whole('gh' + 's_' + mixed(36)),
  'GitHub refresh token': () => whole('gh' + 'r_' + mixed(76)),
  'GitHub fine-grained PAT': () => whole('github' + '_pat_' + mixed(22) + '_' + mixed(59)),
  'OpenAI legacy key': () => whole('sk' + '-' + mixed(20) + 'T3Blbk' + 'FJ' + mixed(20)),
  'OpenAI project key': () => whole('sk' + '-proj-' + mixed(74, ALNUM_DASH) + 'T3Blbk' + 'FJ' + mixed(74, ALNUM_DASH)),
  'OpenAI service-account key': () => whole('sk' + '-svcacct-' + mixed(58, ALNUM_DASH) + 'T3Blbk' + 'FJ' + mixed(58, ALNUM_DASH)),
  'OpenAI admin key': () => whole('sk' + '-admin-' + mixed(58, ALNUM_DASH) + 'T3Blbk' + 'FJ' + mixed(58, ALNUM_DASH)),
  'OpenRouter key': () => whole('sk' + '-or-v1-' + randomChars(64, HEX)),
  'Anthropic API key': () => whole('sk' + '-ant-api03-' + mixed(93, ALNUM_DASH) + 'AA'),
  'Anthropic admin key': () => whole('sk' + '-ant-admin01-' + mixed(93, ALNUM_DASH) + 'AA'),
  'Anthropic OAuth token': () => whole('sk' + '-ant-oat01-' + mixed(93, ALNUM_DASH) + 'AA'),
  'Slack bot token': () => whole('xo' + 'xb-' + randomChars(12, DIGITS) + '-' + randomChars(12, DIGITS) + '-' + mixed(24)),
  'Slack user token': () => whole('xo' + 'xp-' + randomChars(11, DIGITS) + '-' + randomChars(11, DIGITS) + '-' + randomChars(12, DIGITS) + '-' + mixed(32)),
  'Slack app token': () => whole('xa' + 'pp-1-A' + randomChars(10, UPPER + DIGITS) + '-' + randomChars(13, DIGITS) + '-' + randomChars(64, LOWER + DIGITS)),
  'Slack webhook URL': () => {
    const path = 'T' + randomChars(10, UPPER + DIGITS) + '/B' + randomChars(10, UPPER + DIGITS) + '/' + mixed(24)
    return { carried: 'https://hooks.' + 'slack.com/services/' + path, secrets: [path, path.slice(path.lastIndexOf('/') + 1)] }
  },
  'Discord webhook URL': () => {
    const token = mixed(68, ALNUM_DASH)
    return { carried: 'https://discord.com/api/' + 'webhooks/' + randomChars(18, DIGITS) + '/' + token, secrets: [token] }
  },
  'Stripe live secret key': () => whole('sk' + '_live_' + mixed(24)),
  'Stripe test secret key': () => whole('sk' + '_test_' + mixed(99)),
  'Stripe restricted key': () => whole('rk' + '_live_' + mixed(24)),
  'Stripe webhook secret': () => whole('wh' + 'sec_' + mixed(32)),
  JWT: () => {
    const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }))
    const payload = base64url(JSON.stringify({ sub: randomUUID(), iat: randomInt(1e9) }))
    return whole(`${header}.${payload}.${base64url(randomBytes(32))}`)
  },
  'PKCS#8 private key': () => pem('PRIVATE KEY'),
  'RSA private key': () => pem('RSA PRIVATE KEY'),
  'OpenSSH private key': () => pem('OPENSSH PRIVATE KEY'),
  'Google API key': () => whole('AI' + 'za' + mixed(35, ALNUM_DASH)),
  'Google OAuth client secret': () => whole('GOC' + 'SPX-' + mixed(28, ALNUM_DASH)),
  'Google OAuth access token': () => whole('ya' + '29.' + mixed(120, ALNUM_DASH)),
  'GitLab PAT': () => whole('gl' + 'pat-' + mixed(20, ALNUM_DASH)),
  'npm token': () => whole('np' + 'm_' + mixed(36)),
  'Hugging Face token': () => whole('h' + 'f_' + mixed(34, UPPER + LOWER)),
  'SendGrid API key': () => whole('S' + 'G.' + mixed(22, ALNUM_DASH) + '.' + mixed(43, ALNUM_DASH)),
  'Twilio API key': () => whole('S' + 'K' + randomChars(32, HEX)),
  'Groq API key': () => whole('gs' + 'k_' + mixed(52)),
  'Perplexity API key': () => whole('pp' + 'lx-' + mixed(48)),
  'xAI API key': () => whole('x' + 'ai-' + mixed(80)),
  'Replicate token': () => whole('r' + '8_' + mixed(37)),
  'Tavily API key': () => whole('tv' + 'ly-' + mixed(32)),
  'LangSmith API key': () => whole('ls' + 'v2_pt_' + randomChars(32, HEX) + '_' + randomChars(10, HEX)),
  'Azure AD client secret': () => whole(mixed(3) + randomChars(1, DIGITS) + 'Q' + '~' + mixed(34, ALNUM + '_~.-')),
  'DigitalOcean PAT': () => whole('do' + 'p_v1_' + randomChars(64, HEX)),
  'Databricks token': () => whole('da' + 'pi' + randomChars(32, HEX)),
  'Vault service token': () => whole('hv' + 's.' + mixed(95, ALNUM_DASH)),
  'Shopify access token': () => whole('sh' + 'pat_' + randomChars(32, HEX)),
  'Heroku API key': () => whole('HR' + 'KU-AA' + mixed(58, ALNUM_DASH)),
  'Docker PAT': () => whole('dc' + 'kr_pat_' + mixed(27, ALNUM_DASH)),
  'Linear API key': () => whole('lin' + '_api_' + mixed(40)),
  'Telegram bot token': () => whole(randomChars(10, DIGITS) + ':' + 'AA' + mixed(33, ALNUM_DASH)),
  'Bearer token': () => {
    const token = mixed(40, ALNUM + '._~+/-')
    return { carried: 'Bearer ' + token, secrets: [token] }
  },
  'Basic credentials': () => {
    const password = mixed(16)
    const encoded = Buffer.from('agent:' + password).toString('base64')
    return { carried: 'Basic ' + encoded, secrets: [encoded] }
  },
  'password assignment': () => {
    const password = mixed(16)
    return { carried: 'password=' + password, secrets: [password] }
  },
  'api_key assignment in quotes': () => {
    const key = mixed(24)
    return { carried: `"api_key": "${key}"`, secrets: [key] }
  },
  'Postgres URL': () => dbUrl('postgres', 'app'),
  'MySQL URL': () => dbUrl('mysql', 'root'),
  'MongoDB SRV URL': () => dbUrl('mongodb+srv', 'agent'),
  'Redis URL': () => dbUrl('redis', ''),
  'AMQP URL': () => dbUrl('amqp', 'guest'),
}

function pem(label: string): FakeSecret {
  const lines = Array.from({ length: 8 }, () => mixed(64, ALNUM + '+/'))
  return { carried: `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----`, secrets: lines }
}

function dbUrl(scheme: string, user: string): FakeSecret {
  const password = mixed(18)
  return { carried: `${scheme}://${user}:${password}@db.internal.example:5432/main`, secrets: [password] }
}

/** Every way a secret could still be read from an output. */
function leakedForms(secret: string): string[] {
  return [
    secret,
    Buffer.from(secret).toString('base64'),
    Buffer.from(secret).toString('base64url'),
    encodeURIComponent(secret),
    JSON.stringify(secret).slice(1, -1),
  ]
}

function expectClean(output: string, fake: FakeSecret): void {
  for (const secret of fake.secrets) {
    for (const form of leakedForms(secret)) expect(output).not.toContain(form)
  }
  expect(output).toContain(REDACTED)
}

const sse = (data: string): string => data.split('\n').map((line) => `data: ${line}`).join('\n') + '\n\n'

/** Each carrier puts `carried` somewhere a sink could write it, and returns the redacted output. */
const CARRIERS: Record<string, (carried: string) => string> = {
  'free text': (c) => redactor.text(`request failed (${c}); retrying`),
  'JSON string value at depth': (c) => JSON.stringify(redactor.json({ a: { b: [1, { c: `see ${c} here` }] } })),
  'JSON object key': (c) => JSON.stringify(redactor.json({ list: [{ [`k ${c}`]: true }] })),
  'JSON body': (c) => redactor.body(JSON.stringify({ messages: [{ role: 'user', content: `use ${c}` }] }), 'application/json; charset=utf-8'),
  'query string value': (c) => redactor.url(`https://api.example.com/v1/search?page=2&q=${encodeURI(c).replace(/[+&#]/g, encodeURIComponent)}`),
  'percent-encoded query string value': (c) => redactor.url(`https://api.example.com/v1/search?q=${encodeURIComponent(`find ${c}`)}&page=2`),
  'double-encoded text': (c) => redactor.text(`next=${encodeURIComponent(`/cb?note=${encodeURIComponent(c)}`)}`),
  'URL path segment': (c) => redactor.url(`/v1/items/${encodeURIComponent(c)}/children?page=1`),
  'form body': (c) => redactor.body(`page=2&note=${encodeURIComponent(`x ${c}`)}`, 'application/x-www-form-urlencoded'),
  'SSE JSON data line': (c) => redactor.body(`event: delta\n${sse(JSON.stringify({ delta: { text: c } }))}data: [DONE]\n\n`, 'text/event-stream'),
  'SSE text data line': (c) => redactor.body(`: keep-alive\n${sse(`plain ${c}`)}`, 'text/event-stream'),
  'non-secret header': (c) => JSON.stringify(redactor.headers({ 'X-Debug-Note': `upstream said ${c}`, Accept: 'application/json' })),
  'base64-encoded text': (c) => redactor.text(`blob=${Buffer.from(`payload ${c} end`).toString('base64')} done`),
  'base64 body inside JSON': (c) => redactor.body(JSON.stringify({ data: Buffer.from(`{"note":"${c.replace(/\n/g, '\\n')}"}`).toString('base64') }), 'application/json'),
  'multipart field': (c) =>
    redactor.body(`--b1\r\nContent-Disposition: form-data; name="note"\r\n\r\nsee ${c}\r\n--b1--\r\n`, 'multipart/form-data; boundary=b1'),
  // Protocol fields whose names only look like secrets keep their values (protocol-fields.ts, #37):
  // a credential under one of them is still found by its shape.
  'MCP progressToken': (c) => redactor.body(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'sync', arguments: {}, _meta: { progressToken: c } } }), 'application/json'),
  'MCP progress notification': (c) => redactor.body(sse(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: c, progress: 1, total: 4 } })), 'text/event-stream'),
  'MCP cursor': (c) => redactor.body(JSON.stringify({ jsonrpc: '2.0', id: 2, result: { tools: [], nextCursor: c } }), 'application/json'),
  'OAuth server metadata': (c) => redactor.body(JSON.stringify({ issuer: 'https://auth.example', authorization_endpoint: c, token_endpoint: `${c}/token`, token_endpoint_auth_methods_supported: [c] }), 'application/json'),
  'OAuth resource metadata': (c) => redactor.body(JSON.stringify({ resource: 'https://mcp.example/mcp', authorization_servers: [c] }), 'application/json'),
  'OAuth client registration': (c) => redactor.body(JSON.stringify({ client_id: 'c-1', token_endpoint_auth_method: c, client_secret_expires_at: c }), 'application/json'),
  'WWW-Authenticate auth-param': (c) => JSON.stringify(redactor.headers({ 'WWW-Authenticate': `Bearer resource_metadata="http://127.0.0.1:4000/prm", error_description="${c.replace(/["\\]/g, '')}"` })),
  'WWW-Authenticate token68': (c) => JSON.stringify(redactor.headers({ 'www-authenticate': [`Basic realm="x", Bearer ${c}`, `Negotiate ${c}`] })),
  'form field named like a protocol field': (c) => redactor.body(`grant_type=authorization_code&token_endpoint_auth_method=${encodeURIComponent(c)}`, 'application/x-www-form-urlencoded'),
}

const matrix = Object.keys(SHAPES).flatMap((shape) => Object.keys(CARRIERS).map((carrier) => [shape, carrier] as const))

describe('fake-secret corpus', () => {
  it.each(matrix)('redacts a %s in a %s', (shape, carrier) => {
    const fake = (SHAPES[shape] as () => FakeSecret)()
    expectClean((CARRIERS[carrier] as (c: string) => string)(fake.carried), fake)
  })

  it.each(Object.keys(SHAPES))('redacts a %s in an Authorization header and a secret-named JSON field', (shape) => {
    const fake = (SHAPES[shape] as () => FakeSecret)()
    expectClean(JSON.stringify(redactor.headers({ Authorization: fake.carried, 'x-api-key': [fake.carried] })), fake)
    expectClean(JSON.stringify(redactor.json({ credentials: { value: fake.carried } })), fake)
  })

  it.each(Object.keys(SHAPES))('reports a %s through containsSecret', (shape) => {
    const fake = (SHAPES[shape] as () => FakeSecret)()
    expect(redactor.containsSecret(`x ${fake.carried} y`)).toBe(true)
  })
})

const sha256 = (): string => createHash('sha256').update(randomBytes(32)).digest('hex')

/** Near misses that a credential scan must leave alone. */
const NEAR_MISSES: Record<string, () => string> = {
  'sk- with five characters': () => 'sk' + '-' + randomChars(5, ALNUM),
  'ordinary words': () => 'the skeleton key of the monkey, by the author; task-management overview',
  'a UUID': () => randomUUID(),
  'an ISO date': () => new Date(randomInt(2e12)).toISOString(),
  'a sha256 hex digest': sha256,
  'a git commit sha': () => sha256().slice(0, 40),
  'a short ghp_ prefix': () => 'gh' + 'p_' + randomChars(10, ALNUM),
  'an AWS key id with a lowercase body': () => 'AK' + 'IA' + randomChars(16, LOWER),
  'a Twilio-like id inside a word': () => 'TASK' + randomChars(32, HEX),
  'an account SID': () => 'AC' + randomChars(32, HEX),
  'a short Slack prefix': () => 'xo' + 'xb-123',
  'a lone base64url JSON header': () => base64url('{"alg":"none"}'),
  'Bearer before an ordinary word': () => 'the Bearer token goes in the header',
  'Basic before an ordinary word': () => 'Basic information about Token Management',
  'an email address': () => 'agent.smith@example.com',
  'a URL without userinfo': () => 'https://api.example.com:8443/v1/chat/completions?model=gpt&max_tokens=5',
  'a URL with only a username': () => 'ssh://git@github.com/org/repo.git',
  'a semver string': () => '1.22.3-beta.4+build.5',
  'token counters': () => 'max_tokens=100 input_tokens: 12 completion_tokens=7',
  'ordinary key names': () => 'idempotency_key=abc-123 cache_key=v1:user:9 key=value sort_key: name monkey=3 author=ann',
  'pagination tokens': () => 'next_page_token=CAE3 page_token=xyz',
  'base64 of random bytes': () => randomBytes(48).toString('base64'),
  'base64 of ordinary text': () => Buffer.from('hello world, this is an ordinary sentence').toString('base64'),
  'a public key block': () => '-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----',
  'a certificate block': () => '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----',
  'a Windows path': () => 'C:\\Users\\agent\\AppData\\Local\\Temp\\toolstorm-cassette.json',
  'a percent-encoded ordinary query': () => 'q=' + encodeURIComponent('café & crème / 100%'),
}

describe('near misses', () => {
  it.each(Object.keys(NEAR_MISSES))('leaves %s unchanged in free text', (name) => {
    const value = (NEAR_MISSES[name] as () => string)()
    expect(redactor.text(value)).toBe(value)
    expect(redactor.containsSecret(value)).toBe(false)
  })

  it.each(Object.keys(NEAR_MISSES))('leaves %s unchanged in JSON, headers and SSE', (name) => {
    const value = (NEAR_MISSES[name] as () => string)()
    // The value also serves as a key, which must survive; the value under it may not, when the
    // key names a secret (`the Bearer token …`).
    const out = redactor.json({ note: value, nested: [{ [value]: 1 }] }) as { note: string; nested: Array<Record<string, unknown>> }
    expect(out.note).toBe(value)
    expect(Object.keys(out.nested[0] as object)).toEqual([value])
    expect(redactor.headers({ 'X-Note': value })).toEqual({ 'X-Note': value })
    const stream = `data: ${JSON.stringify({ text: value })}\n\n`
    expect(redactor.body(stream, 'text/event-stream')).toBe(stream)
  })
})
