/**
 * Which requests are model calls, told from the request head alone (so every other exchange
 * keeps the transports' fast path). `provider` names the wire format: an OpenAI-compatible
 * server (Azure, OpenRouter, a local gateway) is `openai`.
 */
import type { HeaderMap } from '../engine/http.js'
import type { ModelCall } from '../engine/schema/model-call.js'

export type ModelEndpoint = Pick<ModelCall, 'provider' | 'api'>

/**
 * The model API a request calls, or null:
 * - `POST …/chat/completions`: OpenAI chat completions;
 * - `POST …/v1/responses`: the OpenAI Responses API;
 * - `POST …/v1/messages`, or `POST …/messages` with an `anthropic-version` header: Anthropic messages.
 */
export function recognizeModelCall(method: string, url: URL, headers: HeaderMap): ModelEndpoint | null {
  if (method !== 'POST') return null
  const path = url.pathname.length > 1 && url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname
  if (path.endsWith('/chat/completions')) return { provider: 'openai', api: 'chat.completions' }
  if (path.endsWith('/v1/responses')) return { provider: 'openai', api: 'responses' }
  if (path.endsWith('/v1/messages') || (path.endsWith('/messages') && headers['anthropic-version'] !== undefined)) return { provider: 'anthropic', api: 'messages' }
  return null
}
