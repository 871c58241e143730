/**
 * One teardown for every test: `closing(thing)` closes `thing` when the current test finishes,
 * passed or failed (`onTestFinished`), so no `let x = null` + `afterEach` block is written.
 * Anything with `close()`, `dispose()` or `Symbol.asyncDispose` / `Symbol.dispose` qualifies:
 * proxies, replay servers, upstreams, pools, interceptions, MSW servers, undici agents.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import type http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { onTestFinished } from 'vitest'

export type Closable = { close(): unknown } | { dispose(): unknown } | { [Symbol.asyncDispose](): PromiseLike<void> } | { [Symbol.dispose](): void }

function closeOf(thing: Closable): () => unknown {
  if (Symbol.asyncDispose in thing) return () => thing[Symbol.asyncDispose]()
  if ('close' in thing) return () => thing.close()
  if ('dispose' in thing) return () => thing.dispose()
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
