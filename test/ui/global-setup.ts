/**
 * The browser tests need the built pages (`npm test` builds them; `npx vitest run` alone may
 * not have): build them once here when they are missing.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from '../helpers/cli.js'

export default function setup(): void {
  const missing = ['dashboard', 'lab'].filter((site) => !existsSync(path.join(ROOT, 'dist', site, 'index.html')))
  if (!existsSync(path.join(ROOT, 'dist', 'cli', 'main.js'))) throw new Error('Failed to run the browser tests: dist/ is not built. Run "npm run build" first.')
  if (missing.length) execFileSync(process.execPath, [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '-c', 'web/vite.config.ts', '--mode', missing[0] as string], { cwd: ROOT, stdio: 'inherit' })
  if (missing.length > 1) execFileSync(process.execPath, [path.join(ROOT, 'node_modules/vite/bin/vite.js'), 'build', '-c', 'web/vite.config.ts', '--mode', missing[1] as string], { cwd: ROOT, stdio: 'inherit' })
}
