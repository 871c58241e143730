import { z } from 'zod'
import { defineFault } from './fault.js'
import type { BaseRule } from '../schema/rule-base.js'

export interface ReplaceRule extends BaseRule {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string | undefined
}

/**
 * Serve a fixed response instead of the upstream's: `replacement` as JSON (or `body` as text),
 * with `status` (default 200) and extra `headers`. The upstream is never called, and every call
 * gets a pristine copy. With status 200 and no `body`, a plug-in that knows the request shapes
 * `replacement` as its service answers (`shapeResult`): on an MCP call the tool's result, a
 * JSON-RPC answer with the request's id whose `structuredContent` it is.
 */
export const replaceFault = defineFault<'replace', ReplaceRule>({
  type: 'replace',
  phase: 'before-upstream',
  params: {
    status: z.int({ error: 'expected an HTTP status from 100 to 599' }).min(100, { error: 'expected an HTTP status from 100 to 599' }).max(599, { error: 'expected an HTTP status from 100 to 599' }).default(200),
    headers: z.record(z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, { error: 'expected HTTP header names' }), z.string()).default({}),
    body: z.string().optional(),
  },
  explain: (rule) => `answer ${rule.status} with ${rule.body !== undefined ? 'the configured body' : 'the configured JSON'} instead of calling the upstream`,
  async apply({ rule, request, protocol }) {
    // On an MCP call a bare JSON body is no answer, and the client would wait for its timeout.
    const shaped = rule.body === undefined && rule.status === 200 ? protocol.shapeResult?.(request, rule.replacement) : null
    if (shaped) {
      const headers = { ...shaped.headers }
      const { body } = shaped
      for (const [name, value] of Object.entries(rule.headers)) headers[name.toLowerCase()] = value
      return { action: { type: 'respond', status: 200, headers, body }, injected: true }
    }
    const isText = rule.body !== undefined
    const text = isText ? (rule.body as string) : JSON.stringify(rule.replacement)
    const headers: Record<string, string> = { 'content-type': isText ? 'text/plain; charset=utf-8' : 'application/json' }
    for (const [name, value] of Object.entries(rule.headers)) headers[name.toLowerCase()] = value
    return { action: { type: 'respond', status: rule.status, headers, body: new TextEncoder().encode(text) }, injected: true }
  },
})
