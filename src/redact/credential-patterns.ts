/**
 * Regexes for credential-shaped strings, found anywhere in text.
 *
 * Shapes follow the gitleaks rule set (MIT) and provider documentation, translated to
 * JavaScript: no inline `(?i)` flags, and every quantifier bounded or over a single character
 * class so that no pattern can backtrack catastrophically.
 * @see docs/redaction.md for the shapes users are told are redacted, and what has none.
 * @note A pattern may capture a structural prefix (`pre`, such as `Bearer ` or `postgres://`)
 * and suffix (`post`, such as `@`) that stay; only the middle becomes `[REDACTED]`.
 */
import { redactPrivateKeyBlocks } from './private-key-blocks.js'
import { REDACTED } from './redacted-marker.js'

/** One credential shape: a global regex and, optionally, a check on the captured secret. */
export interface CredentialPattern {
  /** Stable id (the gitleaks rule id where one exists). */
  readonly id: string
  /** What the pattern catches, for documentation and test names. */
  readonly description: string
  /** Global regex; named groups `pre` and `post` are kept, the rest of the match is replaced. */
  readonly regex: RegExp
  /** Extra check on the replaced part; a match it rejects is left unchanged. */
  readonly accept?: (secret: string) => boolean
}

// Left boundary for prefixed tokens whose prefix ends ordinary identifiers (`task-…` for `sk-`,
// `ask_test_…` for Stripe's `sk_test_`): not inside a longer identifier.
const B = '(?<![A-Za-z0-9_-])'

// No left boundary for prefixes no identifier ends with (`ghp_`, `github_pat_`, `xoxb-`, `eyJ…
// .eyJ`): a token glued to the word before it (`tokenghp_…`, `idxeyJ…`) is still one. Right
// boundaries are the token's own alphabet (an AWS key id is 20 characters of A-Z and 2-7, so a
// lowercase letter after it ends it), never "not a letter".
const GLUED = ''

const pattern = (id: string, description: string, source: string, flags = '', accept?: (secret: string) => boolean): CredentialPattern =>
  accept === undefined
    ? { id, description, regex: new RegExp(source, `g${flags}`) }
    : { id, description, regex: new RegExp(source, `g${flags}`), accept }

/** Whether a value after `Bearer `/`Basic `/`Token ` looks like a credential rather than a word. */
export function isTokenLike(value: string): boolean {
  // Random tokens contain a digit, a base64 symbol or inner capitals; prose ("Basic
  // information", "Bearer credential.", "Basic auth-based login") does not, which keeps false
  // positives on ordinary text low. Long dotted or dashed values (opaque session ids) count too.
  let end = value.length
  while (end > 0 && value[end - 1] === '.') end--
  const word = value.slice(0, end)
  return /[0-9+/=]/.test(word) || (/[a-z]/.test(word) && /[A-Z]/.test(word.slice(1))) || (word.length >= 24 && /[_.~-]/.test(word))
}

/** Every credential shape but PEM private keys (see `private-key-blocks.ts`), in the order they are applied. */
export const CREDENTIAL_PATTERNS: readonly CredentialPattern[] = [
  pattern(
    'url-credentials',
    'userinfo with a password in a URL (http, postgres, mysql, mongodb+srv, redis, amqp, ftp, …)',
    '(?<pre>\\b[A-Za-z][A-Za-z0-9+.-]{0,30}:(?:\\\\?/){2})[^\\s/?#@:\'"<>\\\\]{0,200}:[^\\s/?#\'"<>\\\\]{1,200}(?<post>@)',
  ),
  pattern(
    'jwt',
    'JSON Web Token (header.payload.signature, or unsigned with a trailing dot)',
    `${GLUED}eyJ[A-Za-z0-9_-]{10,8192}\\.eyJ[A-Za-z0-9_-]{2,65536}\\.[A-Za-z0-9_-]{0,8192}`,
  ),
  pattern('aws-access-key-id', 'AWS access key id (AKIA, ASIA, ABIA, ACCA, A3T…), also glued to lowercase text', '(?<![A-Z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}'),
  pattern('aws-bedrock-api-key', 'AWS Bedrock long-lived API key (ABSK…)', '(?<![A-Za-z0-9])ABSK[A-Za-z0-9+/]{109,269}={0,2}'),
  pattern('github-token', 'GitHub token (ghp_, gho_, ghu_, ghs_, ghr_)', `${GLUED}gh[pousr]_[A-Za-z0-9]{36,251}`),
  pattern('github-fine-grained-pat', 'GitHub fine-grained PAT (github_pat_…)', `${GLUED}github_pat_[A-Za-z0-9_]{22,255}`),
  pattern('anthropic-api-key', 'Anthropic key (sk-ant-api03-, sk-ant-admin01-, sk-ant-oat01-, …)', `${B}sk-ant-[a-z0-9]{2,20}-[A-Za-z0-9_-]{20,400}`),
  pattern(
    'openai-api-key',
    'OpenAI key (sk-proj-, sk-svcacct-, sk-admin-, sk-None-, and legacy sk-…T3BlbkFJ…)',
    `${B}sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,400}`,
  ),
  pattern(
    'sk-api-key',
    'other sk- provider keys (legacy OpenAI, OpenRouter sk-or-v1-, DeepSeek, …): 20+ characters with a digit or capital',
    `${B}sk-(?:[a-z0-9]{2,12}-){0,2}(?=[A-Za-z0-9_-]{0,400}[0-9A-Z])[A-Za-z0-9_-]{20,400}`,
  ),
  pattern('slack-token', 'Slack token (xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-, xoxe-)', `${GLUED}xox[abposre]-[A-Za-z0-9-]{10,250}`),
  pattern('slack-app-token', 'Slack app-level token (xapp-…)', `${GLUED}xapp-[0-9]-[A-Za-z0-9-]{10,250}`, 'i'),
  pattern(
    'slack-webhook-url',
    'Slack webhook URL path (hooks.slack.com/services/…), also with JSON-escaped slashes',
    '(?<pre>hooks\\.slack\\.com\\\\?/(?:services|workflows|triggers)\\\\?/)[A-Za-z0-9+/\\\\_-]{20,300}',
    'i',
  ),
  pattern(
    'discord-webhook-url',
    'Discord webhook token (discord.com/api/webhooks/<id>/<token>)',
    '(?<pre>discord(?:app)?\\.com\\\\?/api\\\\?/webhooks\\\\?/[0-9]{5,30}\\\\?/)[A-Za-z0-9_-]{20,200}',
    'i',
  ),
  pattern('stripe-secret-key', 'Stripe secret or restricted key (sk_live_, sk_test_, rk_live_, …)', `${B}(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,255}`),
  pattern('stripe-webhook-secret', 'Stripe webhook signing secret (whsec_…)', `${B}whsec_[A-Za-z0-9+/=]{20,255}`),
  pattern('gcp-api-key', 'Google API key, including Gemini (AIza…)', `${B}AIza[A-Za-z0-9_-]{35}`),
  pattern('google-oauth-client-secret', 'Google OAuth client secret (GOCSPX-…)', `${B}GOCSPX-[A-Za-z0-9_-]{20,40}`),
  pattern('google-oauth-access-token', 'Google OAuth access token (ya29.…)', `${B}ya29\\.[A-Za-z0-9_-]{20,2048}`),
  pattern('gitlab-token', 'GitLab token (glpat-, gldt-, glrt-, glptt-, glcbt-, glsoat-, …)', `${B}gl(?:pat|dt|rt|ptt|cbt|soat|ft|imt|agent|ffct|oas)-[A-Za-z0-9_.-]{20,300}`),
  pattern('npm-access-token', 'npm access token (npm_…)', `${B}npm_[A-Za-z0-9]{36,64}`),
  pattern('huggingface-token', 'Hugging Face token (hf_…, api_org_…)', `${B}(?:hf|api_org)_[A-Za-z0-9]{30,40}`),
  pattern('sendgrid-api-key', 'SendGrid API key (SG.<id>.<secret>)', '(?<![A-Za-z0-9])SG\\.[A-Za-z0-9_-]{16,32}\\.[A-Za-z0-9_-]{16,64}'),
  pattern('twilio-api-key', 'Twilio API key (SK + 32 hex, not after a letter or digit, not before more hex)', '(?<![A-Za-z0-9])SK[0-9a-fA-F]{32}(?![0-9a-fA-F])'),
  pattern('groq-api-key', 'Groq API key (gsk_…)', `${B}gsk_[A-Za-z0-9]{40,64}`),
  pattern('perplexity-api-key', 'Perplexity API key (pplx-…)', `${B}pplx-[A-Za-z0-9]{40,64}`),
  pattern('xai-api-key', 'xAI API key (xai-…)', `${B}xai-[A-Za-z0-9]{60,100}`),
  pattern('replicate-api-token', 'Replicate API token (r8_…)', `${B}r8_[A-Za-z0-9]{37,40}`),
  pattern('tavily-api-key', 'Tavily API key (tvly-…)', `${B}tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,40}`),
  pattern('langsmith-api-key', 'LangSmith API key (lsv2_pt_…, lsv2_sk_…)', `${B}lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}`),
  pattern('azure-ad-client-secret', 'Azure AD client secret (…Q~…)', '(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}'),
  pattern('digitalocean-token', 'DigitalOcean token (dop_v1_, doo_v1_, dor_v1_)', `${B}do[opr]_v1_[a-f0-9]{64}`),
  pattern('databricks-api-token', 'Databricks token (dapi + 32 hex)', `${B}dapi[a-f0-9]{32}(?:-[0-9])?`),
  pattern('vault-token', 'HashiCorp Vault token (hvs., hvb., hvr.)', `${B}hv[sbr]\\.[A-Za-z0-9_-]{24,250}`),
  pattern('shopify-token', 'Shopify token (shpat_, shpca_, shppa_, shpss_)', `${B}shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}`),
  pattern('heroku-api-key-v2', 'Heroku API key v2 (HRKU-AA…)', `${B}HRKU-AA[A-Za-z0-9_-]{58}`),
  pattern('docker-pat', 'Docker Hub personal access token (dckr_pat_…)', `${B}dckr_pat_[A-Za-z0-9_-]{27,40}`),
  pattern('pypi-token', 'PyPI upload token (pypi-AgEIcHlwaS5vcmc…)', `${B}pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,300}`),
  pattern('linear-api-key', 'Linear API key (lin_api_…)', `${B}lin_api_[A-Za-z0-9]{40}`),
  // Telegram API URLs glue the token to `bot`: `/bot<id>:AA…/sendMessage`.
  pattern('telegram-bot-token', 'Telegram bot token (<bot id>:AA…), also right after /bot', '(?:(?<=bot)|(?<![A-Za-z0-9]))[0-9]{8,10}:AA[A-Za-z0-9_-]{33}'),
  pattern(
    'authorization-scheme',
    'credential after an auth scheme word (Bearer, Basic, Token, Bot), 8+ token-like characters',
    '(?<pre>\\b(?:Bearer|Basic|Token|Bot)[ \\t]{1,4})(?:[A-Za-z0-9._~+/=-]|\\\\/){8,4096}',
    'i',
    isTokenLike,
  ),
]

/** Replace every credential-shaped substring of `text` by `mask(secret)` (default `[REDACTED]`), keeping structural prefixes. */
export function redactCredentialShapes(text: string, mask: (secret: string) => string = () => REDACTED): string {
  // Whole key blocks first, so no token pattern bites a piece out of one.
  let out = redactPrivateKeyBlocks(text, mask)
  for (const { regex, accept } of CREDENTIAL_PATTERNS) {
    regex.lastIndex = 0
    out = out.replace(regex, (...args: unknown[]) => {
      const match = args[0] as string
      const groups = args[args.length - 1]
      const named = typeof groups === 'object' && groups !== null ? (groups as { pre?: string; post?: string }) : {}
      const pre = named.pre ?? ''
      const post = named.post ?? ''
      const secret = match.slice(pre.length, match.length - post.length)
      if (accept !== undefined && !accept(secret)) return match
      return pre + mask(secret) + post
    })
  }
  return out
}
