/**
 * One Vite config, two sites: `vite build -c web/vite.config.ts --mode dashboard` and
 * `--mode lab`. Each builds into `dist/<site>/` with relative asset URLs, so the files work
 * wherever they are served (the lab also from `file://`: it is one classic script).
 *
 * The lab bundles the engine itself (compiled, from `dist/`). The engine imports a few Node
 * built-ins; here they resolve to small browser shims (`web/shims/`), so no engine code changes
 * for the browser.
 */
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig, type Plugin } from 'vite'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '..')
const shim = (name: string) => path.join(here, 'shims', name)

const SITES = ['dashboard', 'lab'] as const
type Site = (typeof SITES)[number]

/** Node built-ins the engine imports, and what the browser gets instead. */
const NODE_SHIMS: Record<string, string> = {
  'node:crypto': shim('node-crypto.ts'),
  'node:diagnostics_channel': shim('node-diagnostics-channel.ts'),
  'node:async_hooks': shim('node-async-hooks.ts'),
  'node:zlib': shim('node-zlib.ts'),
  'node:util': shim('node-util.ts'),
}

/**
 * Project modules that only make sense in Node (run-demo.js imports them for its other transports).
 * @note The lab bundles the engine as `tsc` compiled it into `dist/` (the code the CLI runs), so
 * `npm run build` runs tsc first; its `.d.ts` files also keep Node-only sources out of the DOM
 * type-check of `web/`.
 */
const NODE_ONLY_MODULES = [path.join(root, 'dist/interceptors/intercept.js'), path.join(root, 'dist/demo/shipping-service.js')]

function nodeOnlyModules(): Plugin {
  return {
    name: 'toolstorm:node-only-modules',
    enforce: 'pre',
    async resolveId(source, importer, options) {
      if (!importer || !source.startsWith('.')) return null
      const resolved = await this.resolve(source, importer, { ...options, skipSelf: true })
      if (resolved && NODE_ONLY_MODULES.includes(resolved.id)) return shim('node-only.ts')
      return null
    },
  }
}

/**
 * Make the lab's page work from `file://` too: Chromium refuses module scripts (and `crossorigin`
 * fetches) from files, so the single IIFE bundle is loaded as a classic deferred script.
 */
function classicScript(): Plugin {
  return {
    name: 'toolstorm:classic-script',
    enforce: 'post',
    transformIndexHtml: (html) => html.replace(/<script type="module" crossorigin/g, '<script defer').replace(/ crossorigin(?=[ >])/g, ''),
  }
}

export default defineConfig(({ mode }) => {
  if (!(SITES as readonly string[]).includes(mode)) throw new Error(`Failed to build the web pages: unknown site "${mode}". Use --mode ${SITES.join(' or --mode ')}.`)
  const site = mode as Site
  const lab = site === 'lab'
  return {
    root: path.join(here, site),
    base: './',
    publicDir: false,
    logLevel: 'warn',
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    resolve: { alias: lab ? NODE_SHIMS : {} },
    plugins: lab ? [nodeOnlyModules(), classicScript()] : [],
    define: { 'process.env.NODE_ENV': JSON.stringify('production') },
    build: {
      outDir: path.join(root, 'dist', site),
      emptyOutDir: true,
      target: 'es2022',
      modulePreload: false,
      reportCompressedSize: false,
      chunkSizeWarningLimit: 400,
      cssCodeSplit: !lab,
      rollupOptions: lab ? { output: { format: 'iife' } } : {},
    },
  }
})
