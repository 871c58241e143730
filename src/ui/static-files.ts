/**
 * Serve a built single-page site (the dashboard, the lab) from a directory: GET and HEAD only,
 * no directory listings, no path escapes, strict security headers. The sites are small, so files
 * are read on request; Vite's hashed `assets/` are cached for good, the HTML never.
 */
import { readFile, stat } from 'node:fs/promises'
import type http from 'node:http'
import path from 'node:path'

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
}

/**
 * The pages run only their own scripts and talk only to their own origin.
 * @note No inline scripts or style attributes are needed: Preact sets styles through the CSSOM.
 */
export const CONTENT_SECURITY_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

export interface StaticSite {
  /** Absolute directory of the built site (holds `index.html`). */
  readonly root: string
  /** URL path the site is mounted at, without a trailing slash (`/dashboard`), or `''`. */
  readonly mount: string
  /** What to tell a person when the site was never built. */
  readonly missingHint: string
}

function securityHeaders(type: string): Record<string, string> {
  return {
    'content-type': type,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    ...(type.startsWith('text/html') ? { 'content-security-policy': CONTENT_SECURITY_POLICY, 'x-frame-options': 'DENY' } : {}),
  }
}

/** Whether `pathname` belongs to the site (the mount itself, or below it). */
export function isUnder(site: StaticSite, pathname: string): boolean {
  return site.mount === '' || pathname === site.mount || pathname.startsWith(`${site.mount}/`)
}

/**
 * Answer a GET/HEAD for a file of the site. Returns false when the request is not for this site.
 * The mount without a trailing slash redirects to it, so relative asset URLs resolve.
 */
export async function serveStatic(site: StaticSite, req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<boolean> {
  if ((req.method !== 'GET' && req.method !== 'HEAD') || !isUnder(site, url.pathname)) return false
  if (site.mount !== '' && url.pathname === site.mount) {
    res.writeHead(308, { location: `${site.mount}/${url.search}`, 'content-length': 0 })
    res.end()
    return true
  }
  let relative: string
  try {
    relative = decodeURIComponent(url.pathname.slice(site.mount.length + 1))
  } catch {
    return notFound(res)
  }
  if (relative === '' || relative.endsWith('/')) relative += 'index.html'
  const file = path.resolve(site.root, relative)
  // No escapes (`..`, absolute paths), no dotfiles, no NUL bytes.
  if (!file.startsWith(site.root + path.sep) || relative.split('/').some((part) => part.startsWith('.')) || relative.includes('\0')) return notFound(res)
  let body: Buffer
  try {
    if (!(await stat(file)).isFile()) return notFound(res)
    body = await readFile(file)
  } catch {
    if (relative === 'index.html') {
      const text = `Failed to serve this page: it was not built (${site.root} has no index.html). ${site.missingHint}\n`
      res.writeHead(503, { ...securityHeaders('text/plain; charset=utf-8'), 'content-length': Buffer.byteLength(text) })
      res.end(text)
      return true
    }
    return notFound(res)
  }
  const type = CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream'
  const immutable = relative.startsWith('assets/')
  res.writeHead(200, { ...securityHeaders(type), 'content-length': body.length, 'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-store' })
  res.end(req.method === 'HEAD' ? undefined : body)
  return true
}

function notFound(res: http.ServerResponse): true {
  const text = 'Not found\n'
  res.writeHead(404, { ...securityHeaders('text/plain; charset=utf-8'), 'content-length': Buffer.byteLength(text) })
  res.end(text)
  return true
}
