/**
 * The MCP methods a client sends over Streamable HTTP (spec revisions 2025-03-26 to 2025-11-25),
 * for checking rules: a rule's route that names an MCP request is valid even though it is no
 * `METHOD /path`, and a misspelled method is pointed out when the rules are read.
 */
import { closestName } from '../engine/closest-name.js'
import { globMatches, isGlob } from '../engine/glob.js'

export const MCP_METHODS: readonly string[] = [
  'initialize',
  'ping',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
  'notifications/roots/list_changed',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'tasks/get',
  'tasks/list',
  'tasks/result',
  'tasks/cancel',
]

/** A custom method has the same shape: lower-case words joined by slashes. */
const METHOD_SHAPE = /^[a-z][A-Za-z0-9_-]*(\/[A-Za-z0-9_-]+)+$/

/**
 * For a rule route that reads as an MCP route name (`tools/call create_*`, `initialize`, `tools/*`):
 * null when it can match one, else why not. `undefined`: it does not read as MCP at all.
 */
export function mcpRouteProblem(route: string): string | null | undefined {
  const space = route.indexOf(' ')
  const method = space === -1 ? route : route.slice(0, space)
  if (isGlob(method)) return MCP_METHODS.some((known) => globMatches(method, known)) ? null : undefined
  if (MCP_METHODS.includes(method)) return null
  const closest = closestName(method, MCP_METHODS)
  if (closest) return `route "${route}" can never match: "${method}" is not an MCP method. Did you mean "${closest}${space === -1 ? '' : route.slice(space)}"?`
  return METHOD_SHAPE.test(method) ? null : undefined
}
