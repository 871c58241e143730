/**
 * The lab's scripted agent: reads stock, then ships, with one of three recovery policies.
 * It speaks plain HTTP with `fetch`, so the same agent runs in-process and through the proxy.
 */

export const POLICY_IDS = ['optimistic', 'retry', 'resilient'] as const
export type PolicyId = (typeof POLICY_IDS)[number]

export const POLICIES: Readonly<Record<PolicyId, { name: string; description: string }>> = {
  optimistic: { name: 'No retries', description: 'One attempt per operation. No output validation.' },
  retry: { name: 'Unchecked retries', description: 'Up to 3 attempts. No validation or idempotency.' },
  resilient: { name: 'Validated retries', description: 'Validate outputs, back off, and reuse write keys.' },
}

/** A failed tool call, named after the failure the agent observed. */
export class ToolCallError extends Error {
  constructor(
    readonly kind: 'ConnectionLost' | 'RateLimited' | 'GatewayTimeout' | 'ServiceUnavailable' | 'ValueError' | 'BudgetExceeded' | 'HttpError',
    message: string,
    readonly retryAfter = 0,
  ) {
    super(message)
  }

  override get name(): string {
    return this.kind
  }
}

const TRANSIENT = new Set(['ConnectionLost', 'RateLimited', 'GatewayTimeout', 'ServiceUnavailable'])

export interface AgentOptions {
  readonly baseUrl: string
  readonly policy: PolicyId
  /** Spend (virtual) seconds between attempts. */
  sleep(seconds: number): Promise<void>
  /** Extra headers on every request (for example `x-toolstorm-run`). */
  readonly headers?: Record<string, string>
  /** The fetch to call tools with (default: the global one). The browser lab passes its own. */
  readonly fetch?: (url: string, init: RequestInit) => Promise<Response>
}

export type TaskOutcome = { completed: true; receipt: Record<string, unknown> } | { completed: false; reason: string }

/** Run the shipping task once and report how it ended. */
export async function runAgent(options: AgentOptions): Promise<TaskOutcome> {
  const { policy } = options
  const attempts = policy === 'optimistic' ? 1 : 3

  const call = async (method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<Record<string, unknown>> => {
    let response: Response
    try {
      response = await (options.fetch ?? fetch)(options.baseUrl + path, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers, ...extraHeaders },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    } catch (error) {
      throw new ToolCallError('ConnectionLost', `Connection lost: ${(error as Error).message}`)
    }
    const text = await response.text()
    if (response.status === 429) {
      const ms = response.headers.get('retry-after-ms')
      const seconds = ms !== null ? Number(ms) / 1000 : Number(response.headers.get('retry-after') ?? 0)
      throw new ToolCallError('RateLimited', `Rate limited; retry after ${seconds}s`, seconds)
    }
    if (response.status === 503 && response.headers.get('x-toolstorm-refused') === 'call-budget') throw new ToolCallError('BudgetExceeded', 'Call budget exhausted')
    if (response.status === 503) throw new ToolCallError('ServiceUnavailable', 'Service unavailable')
    if (response.status === 504) throw new ToolCallError('GatewayTimeout', 'Gateway timeout')
    if (response.status === 422) throw new ToolCallError('ValueError', 'A valid warehouse is required')
    if (response.status >= 400) throw new ToolCallError('HttpError', `HTTP ${response.status}`)
    return JSON.parse(text) as Record<string, unknown>
  }

  const attempt = async (operation: 'inventory' | 'ship', run: () => Promise<Record<string, unknown>>): Promise<Record<string, unknown>> => {
    for (let index = 0; ; index++) {
      try {
        const value = await run()
        if (policy === 'resilient' && operation === 'inventory' && !(typeof value.available === 'boolean' && typeof value.warehouse === 'string')) {
          throw new ToolCallError('ValueError', 'Inventory result violates the response contract')
        }
        return value
      } catch (error) {
        if (!(error instanceof ToolCallError) || error.kind === 'BudgetExceeded') throw error
        if (index + 1 >= attempts) throw error
        if (policy === 'resilient') {
          const retryable = TRANSIENT.has(error.kind) || (error.kind === 'ValueError' && operation === 'inventory')
          if (!retryable) throw error
          await options.sleep(error.kind === 'RateLimited' ? error.retryAfter : 0.15 * 2 ** index)
        }
      }
    }
  }

  try {
    const stock = await attempt('inventory', () => call('GET', '/inventory/CLOUD-01'))
    if (!stock.available) return { completed: false, reason: 'Out of stock' }
    const receipt = await attempt('ship', () =>
      call('POST', '/shipments', { order_id: 'order-1729', warehouse: stock.warehouse }, policy === 'resilient' ? { 'idempotency-key': 'order-1729' } : {}),
    )
    return { completed: true, receipt }
  } catch (error) {
    return { completed: false, reason: error instanceof Error ? error.name : 'Error' }
  }
}
