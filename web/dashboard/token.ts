/**
 * The admin token: taken from the URL fragment the proxy printed (`#token=…`), kept for this tab
 * only (sessionStorage), and removed from the address bar so it is not shared by accident.
 */
const KEY = 'toolstorm.adminToken'

export function takeToken(): string | null {
  const fragment = new URLSearchParams(location.hash.slice(1))
  const fromUrl = fragment.get('token') ?? new URLSearchParams(location.search).get('token')
  if (fromUrl) {
    try {
      sessionStorage.setItem(KEY, fromUrl)
    } catch {
      // Storage may be off; the token still works for this page load.
    }
    fragment.delete('token')
    const rest = fragment.toString()
    history.replaceState(null, '', `${location.pathname}${rest ? `#${rest}` : ''}`)
    return fromUrl
  }
  try {
    return sessionStorage.getItem(KEY)
  } catch {
    return null
  }
}

export function forgetToken(): void {
  try {
    sessionStorage.removeItem(KEY)
  } catch {
    // Nothing stored.
  }
}
