/**
 * `toolstorm proxy` started as a user does, in front of the test upstream whose tool server reports
 * each commit to the proxy's sidecar before it answers; with the addresses and token it printed.
 */
import { startUpstream, type Upstream } from '../helpers/upstream.js'
import { printedAddresses, startCli, type RunningCli } from './spawn-cli.js'

export interface DashboardProxy extends ReturnType<typeof printedAddresses> {
  readonly upstream: Upstream
  readonly proxy: RunningCli
  /** Stop the proxy, then the upstream. */
  close(): Promise<void>
}

export async function startDashboardProxy(args: readonly string[] = []): Promise<DashboardProxy> {
  let adminUrl = ''
  const upstream = await startUpstream({
    onCommit: async (name, key, request) => {
      await fetch(`${adminUrl}/effects`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, key, call: request.headers['x-toolstorm-call'] }) })
    },
  })
  const proxy = await startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', ...args, '--print-admin-token'], 3)
  const addresses = printedAddresses(proxy)
  adminUrl = addresses.adminUrl
  return {
    ...addresses,
    upstream,
    proxy,
    async close() {
      await proxy.stop()
      await upstream.close()
    },
  }
}
