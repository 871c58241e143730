/**
 * Running a user's command next to a proxy or replay server (`record FILE -- cmd`,
 * `replay FILE -- cmd`): the child inherits stdio and gets the server's URLs in its environment;
 * requests to stop (SIGINT, SIGTERM, the parent gone) are passed on to it; its exit code is what
 * the caller reports.
 */
import { spawn } from 'node:child_process'
import os from 'node:os'
import { printError } from './output.js'
import { onStopRequest, type StopOptions } from './stop-request.js'

export interface CommandEnv {
  /** The URL clients use: the proxy or replay server (`TOOLSTORM_PROXY_URL`). */
  proxyUrl: string
  /** Admin API (`TOOLSTORM_SIDECAR`, which the effects helpers read). */
  adminUrl: string
  adminToken: string
  /**
   * The run the command's requests belong to (`toolstorm explore`): `TOOLSTORM_RUN`, the proxy URL
   * with the run in its credentials, and `TOOLSTORM_PROXY_URL` as the run's base URL (`/_run/<id>`).
   */
  run?: string
  /** `forward` or `reverse` (`TOOLSTORM_PROXY_MODE`): how a client in the command addresses the server. */
  mode?: 'forward' | 'reverse'
  /**
   * The CA certificate (PEM file) HTTPS is intercepted with: the command's clients are told to trust
   * it (`TOOLSTORM_CA` and each client's own variable, docs/https.md#trusting-the-ca).
   */
  caFile?: string | null
}

/**
 * The variables each kind of client reads its trusted roots from. `SSL_CERT_FILE` (Python's ssl:
 * urllib, httpx, aiohttp), `REQUESTS_CA_BUNDLE` (requests) and `CURL_CA_BUNDLE` (curl, and requests
 * too) replace the default roots, which is right while every HTTPS request of the command goes
 * through the proxy and is signed by its CA; `NODE_EXTRA_CA_CERTS` adds to Node's.
 */
export const CA_VARIABLES = ['SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'NODE_EXTRA_CA_CERTS'] as const

function caEnvironment(caFile: string | null | undefined): Record<string, string> {
  if (!caFile) return {}
  return { TOOLSTORM_CA: caFile, ...Object.fromEntries(CA_VARIABLES.map((name) => [name, caFile])) }
}

/**
 * The environment the child runs with: the same under `record` and `replay`, whatever the mode,
 * so a client sends in replay exactly what it sent while recording. `HTTP_PROXY` and `HTTPS_PROXY`
 * name the server too: clients that honour them (curl, Python, Node with NODE_USE_ENV_PROXY) send
 * every request through it, their base-URL requests addressed to the server itself, which serves
 * them as if they came directly (docs/cassettes.md#the-commands-environment).
 */
export function commandEnvironment(env: CommandEnv): NodeJS.ProcessEnv {
  // A run is named by the proxy credentials (docs/proxy.md#runs-parallel-workers-on-one-proxy); the password is any.
  const proxy = env.run === undefined ? env.proxyUrl : withRunCredentials(env.proxyUrl, env.run)
  return {
    ...process.env,
    TOOLSTORM_PROXY_URL: env.run === undefined ? env.proxyUrl : `${env.proxyUrl}/_run/${env.run}`,
    TOOLSTORM_SIDECAR: env.adminUrl,
    TOOLSTORM_ADMIN_TOKEN: env.adminToken,
    ...(env.run === undefined ? {} : { TOOLSTORM_RUN: env.run }),
    ...(env.mode === undefined ? {} : { TOOLSTORM_PROXY_MODE: env.mode }),
    ...caEnvironment(env.caFile),
    HTTP_PROXY: proxy,
    http_proxy: proxy,
    HTTPS_PROXY: proxy,
    https_proxy: proxy,
  }
}

function withRunCredentials(proxyUrl: string, run: string): string {
  const url = new URL(proxyUrl)
  url.username = run
  url.password = 'run'
  return url.href.replace(/\/$/, '')
}

/**
 * Run `command` to its end; resolves with its exit code (128 + n when a signal ended it, 127 when
 * it cannot start). Every request to stop (stop-request.ts) is passed on to it: SIGINT as SIGINT,
 * the rest as SIGTERM.
 */
export function runCommand(command: readonly string[], env: NodeJS.ProcessEnv, stop: StopOptions = {}): Promise<number> {
  return new Promise((resolve) => {
    const [file, ...args] = command as [string, ...string[]]
    const child = spawn(file, args, { stdio: 'inherit', env })
    const dispose = onStopRequest((reason) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(reason === 'SIGINT' ? 'SIGINT' : 'SIGTERM')
    }, stop)
    let settled = false
    const done = (code: number) => {
      if (settled) return
      settled = true
      dispose()
      resolve(code)
    }
    child.once('error', (error: NodeJS.ErrnoException) => {
      printError(`Failed to run "${file}": ${error.code === 'ENOENT' ? 'command not found' : error.message}. Check the command after "--".`)
      done(127)
    })
    child.once('exit', (code, signal) => done(code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0)))
  })
}
