/**
 * A second peer: mockttp (the HTTP mocking proxy many suites put in front of their upstreams),
 * forwarding every request to the upstream. Prints its port.
 *
 * @note Installed on first use into node_modules/.cache (as .ci/node-line.sh installs Node lines),
 * not a dev dependency: its optional dependency tls-impersonate@^0.2.1 is not on the registry, and
 * a lock file without it fails `npm ci`; only this benchmark needs it.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const VERSION = '4.7.0'
const target = process.argv[2] as string
const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), `../../node_modules/.cache/toolstorm-bench/mockttp-${VERSION}`)
if (!existsSync(path.join(dir, 'node_modules/mockttp/package.json'))) {
  mkdirSync(dir, { recursive: true })
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'toolstorm-bench-mockttp', private: true }))
  execFileSync('npm', ['install', `mockttp@${VERSION}`, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: dir, stdio: ['ignore', 2, 2] })
}
/** The part of mockttp's API used here (its types are not installed with the repository). */
interface Mockttp {
  start(): Promise<void>
  readonly port: number
  forAnyRequest(): { thenForwardTo(target: string): Promise<unknown> }
}
const { getLocal } = createRequire(path.join(dir, 'package.json'))('mockttp') as { getLocal(options: { recordTraffic: boolean }): Mockttp }
// Nothing recorded: a mock server keeps every request it saw unless told not to, and the proxy's own cost is what is measured.
const server = getLocal({ recordTraffic: false })
await server.start()
await server.forAnyRequest().thenForwardTo(target)
console.log(server.port)
