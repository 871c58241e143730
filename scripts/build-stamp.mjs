#!/usr/bin/env node
/**
 * Whether dist/ was built from the sources as they are now, so `npm pack` (prepack) skips a build
 * that would only write the same files again. `npm run build` ends with `write`: a hash of the
 * build's inputs, kept in dist/.build-stamp (left out of the package). `check` exits 0 when dist/
 * was built from exactly these inputs, 1 when it must be built.
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const STAMP = path.join(root, 'dist', '.build-stamp')
/** What the build reads: the TypeScript and web sources, their configs, the dependency versions. */
const INPUTS = ['src', 'web', 'tsconfig.json', 'package.json', 'package-lock.json']
/** What the build writes: without them, a stamp says nothing. */
const OUTPUTS = ['dist/cli/main.js', 'dist/index.d.ts', 'dist/dashboard/index.html', 'dist/lab/index.html']

/** The files of an input (a folder's, node_modules left out), sorted: the hash does not depend on the file system's order. */
function filesOf(relative) {
  const full = path.join(root, relative)
  if (!existsSync(full)) return []
  if (!statSync(full).isDirectory()) return [relative]
  const entries = readdirSync(full, { withFileTypes: true, recursive: true })
  const files = entries.filter((entry) => entry.isFile() && !entry.parentPath.includes(`${path.sep}node_modules`)).map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
  return files.sort()
}

function inputsHash() {
  const hash = createHash('sha256')
  for (const input of INPUTS) {
    for (const file of filesOf(input)) {
      hash.update(`${file.split(path.sep).join('/')}\0`)
      hash.update(readFileSync(path.join(root, file)))
      hash.update('\0')
    }
  }
  return hash.digest('hex')
}

const command = process.argv[2]
if (command === 'write') {
  writeFileSync(STAMP, `${inputsHash()}\n`)
} else if (command === 'check') {
  const built = OUTPUTS.every((file) => existsSync(path.join(root, file)))
  const stamp = built && existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : null
  if (stamp !== null && stamp === inputsHash()) {
    process.stderr.write('[toolstorm] dist/ is current (built from these sources): no build needed.\n')
  } else {
    process.stderr.write(`[toolstorm] dist/ ${stamp === null ? 'has no build stamp' : 'is older than the sources'}: building.\n`)
    process.exitCode = 1
  }
} else {
  process.stderr.write('usage: node scripts/build-stamp.mjs write|check\n')
  process.exitCode = 2
}
