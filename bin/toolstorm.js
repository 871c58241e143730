#!/usr/bin/env node
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import module from 'node:module'
import { fileURLToPath } from 'node:url'

// Node 22.1 and later keep V8's compiled code of the modules between runs (in the OS temp folder,
// or NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it off): most of a command's start is
// compiling some 300 modules, and Node 24 here starts `toolstorm proxy` in 348 ms instead of 403
// (docs/benchmarks.md#python-fixture). Node 20 has no such cache; the call is skipped there.
module.enableCompileCache?.()

// The build runs when the package is packed (prepack), not on every install: a fresh clone has no
// dist/ after `npm ci`, so its first run builds it (output on stderr: stdout stays the command's).
// An installed package always ships dist/.
const root = fileURLToPath(new URL('..', import.meta.url))
if (!existsSync(new URL('../dist/cli/main.js', import.meta.url)) && existsSync(new URL('../tsconfig.json', import.meta.url))) {
  process.stderr.write('[toolstorm] dist/ is missing (a fresh clone): building it once with `npm run build`...\n')
  const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 2, 2], shell: process.platform === 'win32' })
  if (build.status !== 0) {
    process.stderr.write('[toolstorm] Failed to build dist/: see the output above; run `npm ci` first, then `npm run build`.\n')
    process.exit(1)
  }
}
// toolstorm mcp launches its server before the command line parser loads, so the two starts overlap
// (dist/cli/commands/mcp-launch.js: the parser still decides, and undoes a launch it does not claim).
const mcp = process.argv[2] === 'mcp' ? await import('../dist/cli/commands/mcp-launch.js') : null
mcp?.launchEarly(process.argv.slice(3))
const { main } = await import('../dist/cli/main.js')
process.exitCode = await main()
await mcp?.releaseUnclaimed()
