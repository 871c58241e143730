/**
 * The shipping service's behaviour, independent of any server: the node:http service and the
 * browser lab both call it. `GET /inventory/:sku` reads stock; `POST /shipments` creates a
 * shipment, honours `Idempotency-Key`, and reports each commit as an effect before it answers.
 * The lab's control plane answers beside it: `POST /approvals` (the approval service, which
 * approves every order) and `POST /events` (the observability endpoint, which accepts every event).
 */

/** Virtual seconds each operation takes, as in the reference lab. */
export const INVENTORY_SECONDS = 0.08
export const SHIPMENT_SECONDS = 0.12
export const APPROVAL_SECONDS = 0.05
export const EVENT_SECONDS = 0.02

export interface ServiceHooks {
  /** Spend `seconds` of (virtual) service time. */
  sleep(seconds: number): Promise<void>
  /** Report a commit; resolves once it is on record. `call` is the request's x-toolstorm-call. */
  effect(name: string, key: string, call: string | undefined): Promise<void>
}

export interface Receipt {
  readonly shipment_id: string
  readonly order_id: string
  readonly warehouse: string
}

export interface ServiceRequest {
  readonly method: string
  /** Origin-form path with query. */
  readonly path: string
  /** Lowercase header names. */
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: string
}

export interface ServiceResponse {
  readonly status: number
  readonly body: unknown
}

export interface ShippingLogic {
  readonly shipments: readonly Receipt[]
  handle(request: ServiceRequest): Promise<ServiceResponse>
  reset(): void
}

export function createShippingLogic(hooks: ServiceHooks): ShippingLogic {
  const shipments: Receipt[] = []
  const receipts = new Map<string, Receipt>()
  return {
    shipments,
    reset() {
      shipments.length = 0
      receipts.clear()
    },
    async handle({ method, path, headers, body }) {
      const pathname = path.split('?')[0] as string
      const inventory = /^\/inventory\/([^/]+)$/.exec(pathname)
      if (method === 'GET' && inventory) {
        await hooks.sleep(INVENTORY_SECONDS)
        return { status: 200, body: { sku: decodeURIComponent(inventory[1] as string), available: true, warehouse: 'AMS-01' } }
      }
      if (method === 'POST' && pathname === '/approvals') {
        await hooks.sleep(APPROVAL_SECONDS)
        return { status: 200, body: { approved: true } }
      }
      if (method === 'POST' && pathname === '/events') {
        await hooks.sleep(EVENT_SECONDS)
        return { status: 202, body: { accepted: true } }
      }
      if (method === 'POST' && pathname === '/shipments') {
        await hooks.sleep(SHIPMENT_SECONDS)
        let order: { order_id?: unknown; warehouse?: unknown }
        try {
          order = JSON.parse(body || '{}') as typeof order
        } catch {
          return { status: 400, body: { error: 'Body must be JSON' } }
        }
        if (typeof order.warehouse !== 'string' || order.warehouse === '') return { status: 422, body: { error: 'A valid warehouse is required' } }
        if (typeof order.order_id !== 'string' || order.order_id === '') return { status: 422, body: { error: 'A valid order_id is required' } }
        const idempotencyKey = headers['idempotency-key']
        const stored = idempotencyKey ? receipts.get(idempotencyKey) : undefined
        if (stored) return { status: 200, body: stored }
        const receipt: Receipt = { shipment_id: `SHP-${String(shipments.length + 1).padStart(4, '0')}`, order_id: order.order_id, warehouse: order.warehouse }
        shipments.push(receipt)
        await hooks.effect('shipment', order.order_id, headers['x-toolstorm-call'])
        if (idempotencyKey) receipts.set(idempotencyKey, receipt)
        return { status: 201, body: receipt }
      }
      return { status: 404, body: { error: 'Not found' } }
    },
  }
}
