/**
 * Where the built front ends live: `dist/dashboard/` and `dist/lab/` at the package root, made by
 * `npm run build` (Vite, from `web/`). The same path works from `src/ui/` (tests) and `dist/ui/`.
 */
import { fileURLToPath } from 'node:url'

/** Absolute directory of a built front end. */
export function uiAssetsDir(site: 'dashboard' | 'lab'): string {
  return fileURLToPath(new URL(`../../dist/${site}`, import.meta.url))
}

/** What to do when a front end was not built. */
export const UI_BUILD_HINT = 'Run "npm run build" in the toolstorm checkout (it builds the web pages with Vite).'
