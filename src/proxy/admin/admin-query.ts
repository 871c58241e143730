/**
 * The query parameters each admin endpoint takes. Anything else is refused with 400 naming it, so a
 * misspelled or unsupported parameter (`/report?runs=a`, `PUT /dashboard/rules?run=a`) is never
 * silently ignored, and a client never believes it got what it asked for.
 */
import { AdminApiError } from '../../errors.js'

/** `token` authenticates any request (the dashboard's event stream cannot send a header). */
const EVERYWHERE = ['token']

/** By `METHOD path`; endpoints not listed (static files, unknown paths) are not checked here. */
const ALLOWED: Readonly<Record<string, readonly string[]>> = {
  'GET /report': ['run'],
  'GET /runs': [],
  'GET /runs/lines': [],
  'GET /rules': ['run'],
  'PUT /rules': ['run'],
  'DELETE /rules': ['run'],
  'PUT /dashboard/rules': [],
  'GET /active-run': [],
  'PUT /active-run': ['run'],
  'DELETE /active-run': [],
  'POST /contract': ['run'],
  'POST /reset': ['run'],
  'POST /effects': [],
  'POST /claims': [],
  'POST /v1/traces': [],
  'POST /clock/advance': [],
  'GET /events': ['run'],
  'GET /cassette': ['run'],
  'GET /verdict': [],
}

/** Throws `ERR_ADMIN_QUERY_INVALID` when `url` carries a parameter its endpoint does not take. */
export function checkAdminQuery(method: string | undefined, url: URL): void {
  if (url.search === '') return
  const endpoint = `${method} ${url.pathname}`
  const allowed = ALLOWED[endpoint]
  if (allowed === undefined) return
  const unknown = [...new Set(url.searchParams.keys())].filter((name) => !allowed.includes(name) && !EVERYWHERE.includes(name))
  if (unknown.length === 0) return
  const takes = allowed.length ? `it takes ${allowed.map((name) => `"${name}"`).join(', ')}` : 'it takes none'
  throw new AdminApiError('ERR_ADMIN_QUERY_INVALID', `Failed to use ${endpoint}: unknown query parameter${unknown.length > 1 ? 's' : ''} ${unknown.map((name) => `"${name}"`).join(', ')} (${takes}). See docs/admin-api.md.`)
}
