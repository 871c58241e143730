/**
 * The admin API of one storm as every toolstorm process serves it: the built-in routes (admin-server.ts),
 * runs and per-run rules, claims, the dashboard and the caller's own routes, behind the token and
 * the host check. The proxy serves it beside its data plane (`startProxy`); `toolstorm mcp`, whose
 * data plane is stdio, serves it alone (`startAdminService`).
 *
 * @example
 * const admin = await startAdminService({ storm, host: '127.0.0.1', port: 0 })
 * // the tool server reports effects to admin.url + '/effects'
 * await admin.close()
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Storm } from '../../engine/storm.js'
import type { RunLedger } from '../../engine/ledger/run-ledger.js'
import type { RedisRunState } from '../../state/redis-run-state.js'
import { parseAllowedHosts, type AllowedHosts } from '../allowed-hosts.js'
import { createAdminHandler, type AdminContext } from './admin-server.js'
import { claimRoutes } from './claim-routes.js'
import { createDashboard, DASHBOARD_PATH, type Dashboard } from './dashboard.js'
import { runRoutes } from './run-routes.js'
import { adminToken, answerClientError, createAdminHttpServer } from './admin-http-server.js'
import { closeServers, formatOrigin, listenServer, LOOPBACK } from '../server-pair.js'

type AdminRoute = NonNullable<AdminContext['extraRoutes']>[number]

export interface AdminRoutesOptions {
  readonly storm: Storm
  readonly token: string
  readonly allowedHosts: AllowedHosts
  /** Where runs are kept (default: the storm's memory). */
  readonly ledger?: RunLedger | undefined
  /** The shared state store, with `--state`. */
  readonly state?: RedisRunState | null | undefined
  /** Serve the dashboard (default true). */
  readonly dashboard?: boolean | undefined
  /** The caller's routes (a cassette's, a replay's verdict), after the shared ones. */
  readonly routes?: readonly AdminRoute[] | undefined
}

/** The admin API's request handler and the dashboard it serves (null when off). */
export function adminHandler(options: AdminRoutesOptions): { handler: http.RequestListener; dashboard: Dashboard | null } {
  const { storm, token, allowedHosts } = options
  const ledger = options.ledger ?? storm.ledger
  const dashboard = options.dashboard === false ? null : createDashboard(storm, { publishRules: (config) => ledger.publishRules(config), events: { feed: ledger } })
  const extraRoutes = [runRoutes(storm, options.state ?? null), claimRoutes(storm, ledger), ...(dashboard?.routes ?? []), ...(options.routes ?? [])]
  const handler = createAdminHandler({ storm, token, allowedHosts, ledger, extraRoutes, ...(dashboard ? { publicRoutes: dashboard.publicRoutes } : {}) })
  return { handler, dashboard }
}

export interface AdminServiceOptions extends Omit<AdminRoutesOptions, 'token' | 'allowedHosts'> {
  readonly host?: string | undefined
  /** 0 (default) picks a free one. */
  readonly port?: number | undefined
  readonly token?: string | undefined
  readonly allowHosts?: readonly string[] | undefined
  /** For messages (`MCP wrapper`). */
  readonly selfName?: string | undefined
  /** A server already listening (`host`, `port` are then where it listens): `toolstorm mcp` binds it before it loads the rest. */
  readonly server?: http.Server | undefined
}

export interface AdminService {
  readonly url: string
  readonly token: string
  /** The dashboard page (open it with `#token=<token>`), or null when it is off. */
  readonly dashboardUrl: string | null
  close(): Promise<void>
}

/** The admin API on its own port, for a process whose data plane is not HTTP. */
export async function startAdminService(options: AdminServiceOptions): Promise<AdminService> {
  const host = options.host ?? '127.0.0.1'
  const token = adminToken(options.token, options.selfName ?? 'admin API')
  const allowedHosts = parseAllowedHosts([...(LOOPBACK.has(host) ? [] : [host]), ...(options.allowHosts ?? [])], 'adminAllowHosts')
  const { handler, dashboard } = adminHandler({ ...options, token, allowedHosts })
  const server = options.server ?? createAdminHttpServer()
  server.on('clientError', answerClientError)
  server.on('request', handler)
  const address = options.server ? (server.address() as AddressInfo) : await listenServer(server, options.port ?? 0, host, 'admin')
  const url = formatOrigin(host, address.port)
  let closing: Promise<void> | null = null
  return {
    url,
    token,
    dashboardUrl: dashboard ? `${url}${DASHBOARD_PATH}/` : null,
    close: () =>
      (closing ??= (async () => {
        // Open event streams would hold the server open for the whole grace period.
        dashboard?.close()
        await closeServers([server], null)
      })()),
  }
}
