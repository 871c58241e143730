/** A stdio server's recorded message (`notifications` on a call's line) that is a request: sampling, elicitation, roots. */
import type { StoredServerMessage } from './cassette-schema.js'

/** The method of the server's request `entry` holds, or null when it holds a notification. */
export function serverRequestMethod(entry: StoredServerMessage): string | null {
  const message = entry.message
  if (message === null || typeof message !== 'object' || Array.isArray(message)) return null
  return 'id' in message && typeof message.method === 'string' ? message.method : null
}
