/** The lab's embedded shipping service: the shipping logic behind a real HTTP server on 127.0.0.1. */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createShippingLogic, type Receipt, type ServiceHooks, type ShippingLogic } from './shipping-logic.js'

export interface ShippingService {
  readonly url: string
  readonly shipments: readonly Receipt[]
  /** Forget every shipment and receipt (a fresh warehouse for the next run). */
  reset(): void
  close(): Promise<void>
}

export async function startShippingService(hooks: ServiceHooks): Promise<ShippingService> {
  const logic = createShippingLogic(hooks)
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const headers = firstHeaderValues(req.headers)
      logic
        .handle({ method: req.method ?? 'GET', path: req.url ?? '/', headers, body: Buffer.concat(chunks).toString('utf8') })
        .then(
          ({ status, body }) => ({ status, text: JSON.stringify(body) }),
          (error: unknown) => ({ status: 500, text: JSON.stringify({ error: String(error) }) }),
        )
        .then(({ status, text }) => {
          res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
          res.end(text)
        })
    })
  })
  return listenShippingService(server, logic)
}

/** A request's headers as the shipping logic reads them: lowercase names, the first of a repeated value. */
export function firstHeaderValues(headers: Record<string, string | string[] | undefined> | undefined): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {}
  for (const [name, value] of Object.entries(headers ?? {})) out[name.toLowerCase()] = Array.isArray(value) ? value[0] : value
  return out
}

/** `server` (serving `logic`) listening on 127.0.0.1, as the lab's service. */
export async function listenShippingService(server: http.Server, logic: ShippingLogic): Promise<ShippingService> {
  server.keepAliveTimeout = 1000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    shipments: logic.shipments,
    reset: () => logic.reset(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
