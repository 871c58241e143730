/**
 * Which SSE events end a model provider's stream: the model-calls plug-in's `isFinalEvent`, which
 * the kernel asks (`drop_terminal`, a client leaving after the end). A client that never sees one
 * knows (or should know) that the answer is incomplete.
 *
 * - OpenAI chat completions (and most OpenAI-compatible servers): `data: [DONE]`.
 * - Anthropic messages: `event: message_stop`.
 * - OpenAI Responses: `response.completed`, `response.incomplete` or `response.failed`
 *   (the Responses API sends no `[DONE]`).
 */

const TERMINAL_TYPES = new Set(['message_stop', 'response.completed', 'response.incomplete', 'response.failed'])

/** The `"type"` a JSON event payload opens with, as Anthropic and the Responses API write it. */
const LEADING_TYPE = /^\s*\{\s*"type"\s*:\s*"([^"\\]{1,64})"/

/** Whether an event with this `event:` name and data (its first bytes suffice) ends its stream. */
export function isTerminalEvent(event: string | null, dataHead: string): boolean {
  if (dataHead.startsWith('[DONE]')) return true
  if (event !== null && TERMINAL_TYPES.has(event)) return true
  const type = LEADING_TYPE.exec(dataHead)?.[1]
  return type !== undefined && TERMINAL_TYPES.has(type)
}
