import { describe, expect, it } from 'vitest'
import { DEFAULT_SECRET_KEYS, createSecretNameMatcher, normaliseSecretName } from './secret-names.js'

const isSecretName = createSecretNameMatcher()

describe('secret names', () => {
  it.each([
    ['X-Api-Key', 'x_api_key'],
    ['xApiKey', 'x_api_key'],
    ['XAPIKey', 'xapi_key'],
    ['sshKey', 'ssh_key'],
    ['API key', 'api_key'],
    ['Set-Cookie', 'set_cookie'],
    ['__Secure-next-auth.session-token', 'secure_next_auth_session_token'],
    ['AWS_SECRET_ACCESS_KEY', 'aws_secret_access_key'],
  ])('normalises %s to %s', (name, normalised) => {
    expect(normaliseSecretName(name)).toBe(normalised)
  })

  it.each(DEFAULT_SECRET_KEYS)('treats the default key %s as secret', (key) => {
    expect(isSecretName(key)).toBe(true)
  })

  it.each([
    // ToolStorm's exact matches, in any case and separator.
    'Authorization',
    'set-cookie',
    'Api-Key',
    'apiKey',
    'CLIENT_SECRET',
    'sessionToken',
    // Headers that carry credentials.
    'proxy-authorization',
    'cookie',
    'x-api-key',
    'api-key',
    'x-auth-token',
    'x-csrf-token',
    'x-xsrf-token',
    'x-session-token',
    'x-amz-security-token',
    'x-goog-api-key',
    'ocp-apim-subscription-key',
    'x-functions-key',
    'mcp-session-id',
    'x-hub-signature-256',
    // Substrings and words.
    'new_password',
    'passwordConfirmation',
    'db_passwd',
    'ssh_passphrase',
    'aws_secret_access_key',
    'clientSecret',
    'credentials',
    'gcpCredential',
    'cookies',
    'x_auth',
    'auth_header',
    'basic_auth',
    'auth',
    'pwd',
    'session_id',
    'sessionid',
    'JSESSIONID',
    'PHPSESSID',
    'private_key',
    'privateKey',
    'X-Amz-Signature',
    'X-Amz-Credential',
    'sig',
    'id_token',
    'bearer_token',
    'csrfmiddlewaretoken',
    'authenticity_token',
    'accessToken',
    'oauth_token',
    // `<word>_key` credentials.
    'api_key',
    'x_api_key',
    'ssh_key',
    'sshKey',
    'access_key',
    'secret_key',
    'subscription_key',
    'encryption_key',
    'license_key',
    'xapikey',
    'primary_api_key',
    'api_key_2',
  ])('treats %s as secret', (name) => {
    expect(isSecretName(name)).toBe(true)
  })

  it.each([
    'key',
    'monkey',
    'hotkey',
    'author',
    'authority',
    'authors',
    'authentication_method',
    'idempotency_key',
    'Idempotency-Key',
    'cache_key',
    'sort_key',
    'partition_key',
    'primary_key',
    'foreign_key',
    'public_key',
    'dedup_key',
    'dedupe_key',
    'x-toolstorm-key',
    'x-toolstorm-run',
    'x-toolstorm-call',
    'openai-organization',
    'anthropic-version',
    'content-type',
    'x-request-id',
    'max_tokens',
    'prompt_tokens',
    'completion_tokens',
    'input_tokens',
    'cache_creation_input_tokens',
    'tokens',
    'tokenizer',
    'token_count',
    'token_type',
    'token_usage',
    'next_token',
    'NextToken',
    'nextPageToken',
    'page_token',
    'continuation_token',
    'nonsecret',
    'skeleton',
    'key_id',
    'AccessKeyId',
    'keys',
    'user',
    'email',
    'name',
  ])('treats %s as not secret', (name) => {
    expect(isSecretName(name)).toBe(false)
  })

  it('judges a very long name as data, quickly', () => {
    const started = performance.now()
    expect(isSecretName('A'.repeat(100_000) + 'password')).toBe(false)
    expect(isSecretName('x'.repeat(200) + '_password')).toBe(true)
    expect(performance.now() - started).toBeLessThan(500)
  })

  it('adds user keys, normalised the same way', () => {
    const withKeys = createSecretNameMatcher(['Tenant-PIN', 'otp'])
    expect(withKeys('tenant_pin')).toBe(true)
    expect(withKeys('tenantPin')).toBe(true)
    expect(withKeys('OTP')).toBe(true)
    expect(withKeys('tenant')).toBe(false)
    expect(isSecretName('tenant_pin')).toBe(false)
  })
})
