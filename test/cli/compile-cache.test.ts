/**
 * The command line keeps V8's compiled code between runs where Node can (22.1 and later: most of a
 * command's start is compiling its modules), in the OS temp folder as Node's own default, and not
 * when the user turns it off with NODE_DISABLE_COMPILE_CACHE. On Node 20 there is no such cache.
 */
import { readdir } from 'node:fs/promises'
import path from 'node:path'
import module from 'node:module'
import { describe, expect, it } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { temporaryFolder } from '../helpers/teardown.js'

const hasCache = typeof (module as { enableCompileCache?: unknown }).enableCompileCache === 'function'

/** The compiled modules Node left in `tmp`'s compile cache after one `toolstorm --version`. */
async function cachedAfterRun(env: NodeJS.ProcessEnv): Promise<string[]> {
  const tmp = await temporaryFolder('toolstorm-compile-cache-')
  // Without NODE_COMPILE_CACHE, so only the CLI's own call can turn the cache on.
  const result = await runCli(['--version'], { env: { ...env, TMPDIR: tmp, NODE_COMPILE_CACHE: undefined } })
  expect(result.code, result.stderr).toBe(0)
  expect(result.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/)
  const folder = path.join(tmp, 'node-compile-cache')
  const versions = await readdir(folder).catch(() => [])
  return (await Promise.all(versions.map((version) => readdir(path.join(folder, version))))).flat()
}

describe(`the CLI's compile cache (Node ${process.versions.node})`, () => {
  it.runIf(hasCache)('keeps the compiled code of the modules a command loads in the OS temp folder', async () => {
    // --version loads every command's module: hundreds of them (dist/, yargs, zod).
    expect((await cachedAfterRun({})).length).toBeGreaterThan(100)
  })

  it('keeps nothing when NODE_DISABLE_COMPILE_CACHE is set, or on a Node without the cache', async () => {
    expect(await cachedAfterRun({ NODE_DISABLE_COMPILE_CACHE: '1' })).toEqual([])
    if (!hasCache) expect(await cachedAfterRun({})).toEqual([])
  })
})
