/**
 * The lab's scripted agent: reads stock, then ships, with one of three recovery policies.
 * In the control-plane scenarios it also asks the approval service before it ships and reports
 * the task's end to the observability endpoint: "No retries" and "Unchecked retries" await their
 * telemetry and ship when approval cannot be confirmed (a fail-open guard); "Validated retries"
 * reports without waiting (fail-open) and does not ship without approval (fail-closed).
 * It speaks plain HTTP with `fetch` (so the same agent runs in-process and through the proxy), or
 * calls the same tools on an MCP server (`--via mcp`).
 */

import type { Background } from './background.js'
import type { ScenarioControls } from './scenarios.js'

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

/** The two tools the agent calls, however they are reached (HTTP routes, or an MCP server). */
export interface ShippingTools {
  checkInventory(sku: string): Promise<Record<string, unknown>>
  createShipment(order: { order_id: string; warehouse: unknown }, idempotencyKey?: string): Promise<Record<string, unknown>>
  /** Ask the approval service for leave to ship the order. */
  requestApproval(orderId: string): Promise<Record<string, unknown>>
  /** Report an event to the observability endpoint. */
  reportEvent(event: Record<string, unknown>): Promise<Record<string, unknown>>
}

/** What the agent concluded about a tool call, as `reportClaim()` takes it. */
export interface AgentClaim {
  readonly tool: string
  readonly status: 'success' | 'failure'
}

export interface AgentOptions {
  readonly policy: PolicyId
  /** Spend (virtual) seconds between attempts. */
  sleep(seconds: number): Promise<void>
  /** The tools; by default the HTTP ones at `baseUrl`. */
  readonly tools?: ShippingTools
  readonly baseUrl?: string
  /** Extra headers on every request (for example `x-toolstorm-run`). */
  readonly headers?: Record<string, string>
  /** The fetch to call tools with (default: the global one). The browser lab passes its own. */
  readonly fetch?: (url: string, init: RequestInit) => Promise<Response>
  /** The scenario's control-plane steps (none by default). */
  readonly controls?: ScenarioControls | undefined
  /** Where the agent reports its claims, in the control-plane scenarios. */
  claim?(claim: AgentClaim): Promise<unknown>
  /** Where a fail-open report runs once the task has ended (by default it is awaited). */
  readonly background?: Background | undefined
}

export type TaskOutcome = { completed: true; receipt: Record<string, unknown> } | { completed: false; reason: string }

/** The failure an HTTP status means to the agent, or null for a success. */
export function toolCallErrorFor(status: number, headers: Headers): ToolCallError | null {
  if (status === 429) {
    const ms = headers.get('retry-after-ms')
    const seconds = ms !== null ? Number(ms) / 1000 : Number(headers.get('retry-after') ?? 0)
    return new ToolCallError('RateLimited', `Rate limited; retry after ${seconds}s`, seconds)
  }
  if (status === 503 && headers.get('x-toolstorm-refused') === 'call-budget') return new ToolCallError('BudgetExceeded', 'Call budget exhausted')
  if (status === 503) return new ToolCallError('ServiceUnavailable', 'Service unavailable')
  if (status === 504) return new ToolCallError('GatewayTimeout', 'Gateway timeout')
  if (status === 422) return new ToolCallError('ValueError', 'A valid warehouse is required')
  if (status >= 400) return new ToolCallError('HttpError', `HTTP ${status}`)
  return null
}

/** The tools as the lab's HTTP routes: `GET /inventory/:sku`, `POST /shipments` (`Idempotency-Key`). */
export function httpTools(options: Pick<AgentOptions, 'baseUrl' | 'headers' | 'fetch'>): ShippingTools {
  const call = async (method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<Record<string, unknown>> => {
    let response: Response
    try {
      response = await (options.fetch ?? fetch)((options.baseUrl ?? '') + path, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers, ...extraHeaders },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
    } catch (error) {
      throw new ToolCallError('ConnectionLost', `Connection lost: ${(error as Error).message}`)
    }
    const text = await response.text()
    const failure = toolCallErrorFor(response.status, response.headers)
    if (failure) throw failure
    return JSON.parse(text) as Record<string, unknown>
  }
  return {
    checkInventory: (sku) => call('GET', `/inventory/${sku}`),
    createShipment: (order, key) => call('POST', '/shipments', order, key === undefined ? {} : { 'idempotency-key': key }),
    requestApproval: (orderId) => call('POST', '/approvals', { order_id: orderId }),
    reportEvent: (event) => call('POST', '/events', event),
  }
}

/** Run the shipping task once and report how it ended. */
export async function runAgent(options: AgentOptions): Promise<TaskOutcome> {
  const { policy } = options
  const attempts = policy === 'optimistic' ? 1 : 3
  const tools = options.tools ?? httpTools(options)

  const attempt = async (operation: 'inventory' | 'ship' | 'approval' | 'telemetry', run: () => Promise<Record<string, unknown>>): Promise<Record<string, unknown>> => {
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

  const controls = options.controls ?? {}
  const claims = controls.approval === true || controls.telemetry === true
  const claim = async (status: AgentClaim['status']) => {
    if (claims) await options.claim?.({ tool: 'create_shipment', status })
  }
  // Telemetry never fails the task; the policy decides whether the task waits for it.
  const report = async (outcome: TaskOutcome): Promise<TaskOutcome> => {
    if (!controls.telemetry) return outcome
    const send = () => attempt('telemetry', () => tools.reportEvent({ event: 'task_finished', completed: outcome.completed })).catch(() => undefined)
    if (policy === 'resilient' && options.background) options.background.defer(send)
    else await send()
    return outcome
  }

  let stock: Record<string, unknown>
  try {
    stock = await attempt('inventory', () => tools.checkInventory('CLOUD-01'))
  } catch (error) {
    return report({ completed: false, reason: error instanceof Error ? error.name : 'Error' })
  }
  if (!stock.available) return report({ completed: false, reason: 'Out of stock' })
  if (controls.approval) {
    let approved = false
    try {
      approved = (await attempt('approval', () => tools.requestApproval('order-1729'))).approved === true
    } catch (error) {
      if (error instanceof ToolCallError && error.kind === 'BudgetExceeded') return report({ completed: false, reason: error.name })
    }
    // Fail-closed: without a confirmed approval the resilient agent does not ship, and says so.
    if (!approved && policy === 'resilient') {
      await claim('failure')
      return report({ completed: false, reason: 'ApprovalUnavailable' })
    }
  }
  try {
    const receipt = await attempt('ship', () => tools.createShipment({ order_id: 'order-1729', warehouse: stock.warehouse }, policy === 'resilient' ? 'order-1729' : undefined))
    await claim('success')
    return report({ completed: true, receipt })
  } catch (error) {
    await claim('failure')
    return report({ completed: false, reason: error instanceof Error ? error.name : 'Error' })
  }
}
