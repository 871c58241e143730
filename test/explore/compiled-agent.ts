/**
 * A TypeScript agent of fixtures/explore as the command explore runs: bundled once by esbuild (the
 * compiler tsx runs it with) into one file of plain JavaScript, its packages included, so that
 * each of an explore's dozens of runs starts `node` on one file rather than `node --import tsx`
 * resolving and transforming modules (~0.8 s per process; the MCP SDK's many modules alone take
 * twice the CPU of the bundle). The same source runs. The bundle is named by its content (a
 * changed source is a new file), under the repository's node_modules/.cache.
 */
import { createHash } from 'node:crypto'
import { mkdir, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { build } from 'esbuild'
import { ROOT } from '../helpers/cli.js'

const FOLDER = path.join(ROOT, 'node_modules/.cache/toolstorm-explore-agents')

/** `[node, <bundle of file>]`: the agent's command. */
export async function compiledAgent(file: string): Promise<string[]> {
  const { outputFiles } = await build({
    entryPoints: [file],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    write: false,
    logLevel: 'silent',
    // CommonJS packages in an ES module bundle call require() for Node's own modules.
    banner: { js: "import { createRequire as toolstormRequire } from 'node:module'; const require = toolstormRequire(import.meta.url);" },
  })
  const text = outputFiles[0]!.text
  const bundle = path.join(FOLDER, `${path.basename(file, '.ts')}.${createHash('sha256').update(text).digest('hex').slice(0, 16)}.mjs`)
  await mkdir(FOLDER, { recursive: true })
  // Written whole, then renamed: two files of tests making the same bundle at once both end with it complete.
  const partial = `${bundle}.${process.pid}.tmp`
  await writeFile(partial, text)
  await rename(partial, bundle)
  return [process.execPath, bundle]
}
