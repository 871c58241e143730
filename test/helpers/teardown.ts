/**
 * One teardown for every test: `closing(thing)` closes `thing` when the current test finishes,
 * passed or failed (`onTestFinished`), so no `let x = null` + `afterEach` block is written.
 * Anything with `close()`, `dispose()`, `shutdown()` or `Symbol.asyncDispose` / `Symbol.dispose`
 * qualifies: proxies, replay servers, upstreams, pools, interceptions, MSW servers, undici agents,
 * OpenTelemetry tracer providers.
 * Beside it: `closingServer` (an `http.Server`), `closingChild` (a child process), `settingEnv`
 * (environment variables restored) and `temporaryFolder`. Handlers run in reverse order of
 * registration, so what was made last is closed first.
 */
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import type http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { onTestFinished } from 'vitest'

export type Closable = { close(): unknown } | { dispose(): unknown } | { shutdown(): unknown } | { [Symbol.asyncDispose](): PromiseLike<void> } | { [Symbol.dispose](): void }

function closeOf(thing: Closable): () => unknown {
  if (Symbol.asyncDispose in thing) return () => thing[Symbol.asyncDispose]()
  if ('close' in thing) return () => thing.close()
  if ('dispose' in thing) return () => thing.dispose()
  if ('shutdown' in thing) return () => thing.shutdown()
  return () => thing[Symbol.dispose]()
}

/** Close `thing` when the current test finishes; returns it, so `const proxy = closing(await startProxy())`. */
export function closing<T extends Closable>(thing: T): T {
  onTestFinished(async () => {
    await closeOf(thing)()
  })
  return thing
}

/** A new folder under the system's temporary folder, removed with its contents when the current test finishes. */
export async function temporaryFolder(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix))
  onTestFinished(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** An `http.Server` closed when the current test finishes, its connections dropped first (a keep-alive client would hold close() open). */
export function closingServer<T extends http.Server>(server: T): T {
  onTestFinished(() => {
    server.closeAllConnections()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return server
}

/**
 * A child process killed (SIGKILL) when the current test finishes, if it still runs, and waited
 * for: a failed case leaves no process behind, and the next case does not race its exit.
 */
export function closingChild<T extends ChildProcess>(child: T): T {
  onTestFinished(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = once(child, 'exit')
    child.kill('SIGKILL')
    await exited
  })
  return child
}

/** Set environment variables for the current test; each is restored (or deleted) when it finishes. */
export function settingEnv(vars: Record<string, string>): void {
  for (const [name, value] of Object.entries(vars)) {
    const before = process.env[name]
    onTestFinished(() => {
      if (before === undefined) delete process.env[name]
      else process.env[name] = before
    })
    process.env[name] = value
  }
}
