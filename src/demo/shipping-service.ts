/**
 * The lab's embedded shipping service: a real HTTP server on 127.0.0.1.
 * `GET /inventory/:sku` reads stock; `POST /shipments` creates a shipment, honours
 * `Idempotency-Key`, and reports each commit as an effect before it answers.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** Virtual seconds each operation takes, as in the reference lab. */
export const INVENTORY_SECONDS = 0.08
export const SHIPMENT_SECONDS = 0.12

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

export interface ShippingService {
  readonly url: string
  readonly shipments: readonly Receipt[]
  /** Forget every shipment and receipt (a fresh warehouse for the next run). */
  reset(): void
  close(): Promise<void>
}

export async function startShippingService(hooks: ServiceHooks): Promise<ShippingService> {
  const shipments: Receipt[] = []
  const receipts = new Map<string, Receipt>()

  const server = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body)
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    }
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      void (async () => {
        const url = new URL(req.url ?? '/', 'http://service')
        const call = req.headers['x-toolstorm-call'] as string | undefined
        const inventory = /^\/inventory\/([^/]+)$/.exec(url.pathname)
        if (req.method === 'GET' && inventory) {
          await hooks.sleep(INVENTORY_SECONDS)
          return send(200, { sku: decodeURIComponent(inventory[1] as string), available: true, warehouse: 'AMS-01' })
        }
        if (req.method === 'POST' && url.pathname === '/shipments') {
          await hooks.sleep(SHIPMENT_SECONDS)
          let order: { order_id?: unknown; warehouse?: unknown }
          try {
            order = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as typeof order
          } catch {
            return send(400, { error: 'Body must be JSON' })
          }
          if (typeof order.warehouse !== 'string' || order.warehouse === '') return send(422, { error: 'A valid warehouse is required' })
          if (typeof order.order_id !== 'string' || order.order_id === '') return send(422, { error: 'A valid order_id is required' })
          const idempotencyKey = req.headers['idempotency-key'] as string | undefined
          const stored = idempotencyKey ? receipts.get(idempotencyKey) : undefined
          if (stored) return send(200, stored)
          const receipt: Receipt = { shipment_id: `SHP-${String(shipments.length + 1).padStart(4, '0')}`, order_id: order.order_id, warehouse: order.warehouse }
          shipments.push(receipt)
          await hooks.effect('shipment', order.order_id, call)
          if (idempotencyKey) receipts.set(idempotencyKey, receipt)
          return send(201, receipt)
        }
        return send(404, { error: 'Not found' })
      })().catch((error: unknown) => {
        if (!res.headersSent) send(500, { error: String(error) })
      })
    })
  })
  server.keepAliveTimeout = 1000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    shipments,
    reset() {
      shipments.length = 0
      receipts.clear()
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
