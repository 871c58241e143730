/**
 * The tools an MCP endpoint declared, learnt from the `tools/list` answers that pass by: for each
 * tool, the `outputSchema` its `structuredContent` must match. `schema_drift` on a tool call uses
 * it to change declared fields into values the schema forbids, so a client that validates (the
 * SDKs do, once they listed the tools) always sees the drift.
 *
 * Bounded: at most `MAX_ENDPOINTS` endpoints (the oldest forgotten first), `MAX_TOOLS` tools per
 * endpoint and schemas up to `MAX_SCHEMA_BYTES` of JSON each.
 */
import { jsonRpcMessages } from './json-rpc-body.js'
import type { JsonSchema } from '../engine/http.js'

const MAX_ENDPOINTS = 64
const MAX_TOOLS = 1000
const MAX_SCHEMA_BYTES = 64 * 1024
/** A `tools/list` answer larger than this is not read. */
export const MAX_TOOLS_LIST_BYTES = 1024 * 1024

/** An endpoint is its URL without query and fragment: a session's POSTs all go to it. */
export function endpointOf(url: URL): string {
  return url.origin + url.pathname
}

export class ToolCatalog {
  readonly #endpoints = new Map<string, Map<string, JsonSchema>>()

  /** Learn the tools in a `tools/list` answer's body (JSON or an event stream) sent by `endpoint`. */
  learn(endpoint: string, body: Uint8Array): void {
    for (const message of jsonRpcMessages(body)) {
      const result = message.result as { tools?: unknown } | undefined
      if (result === null || typeof result !== 'object' || !Array.isArray(result.tools)) continue
      let tools = this.#endpoints.get(endpoint)
      if (!tools) {
        if (this.#endpoints.size >= MAX_ENDPOINTS) this.#endpoints.delete(this.#endpoints.keys().next().value as string)
        tools = new Map()
        this.#endpoints.set(endpoint, tools)
      }
      for (const tool of result.tools as unknown[]) {
        if (tool === null || typeof tool !== 'object') continue
        const { name, outputSchema } = tool as { name?: unknown; outputSchema?: unknown }
        if (typeof name !== 'string') continue
        if (outputSchema === null || typeof outputSchema !== 'object' || Array.isArray(outputSchema) || JSON.stringify(outputSchema).length > MAX_SCHEMA_BYTES) {
          tools.delete(name)
          continue
        }
        if (!tools.has(name) && tools.size >= MAX_TOOLS) continue
        tools.set(name, outputSchema as JsonSchema)
      }
    }
  }

  /** The `outputSchema` `tool` declared at `endpoint`, or null when none was seen. */
  outputSchema(endpoint: string, tool: string): JsonSchema | null {
    return this.#endpoints.get(endpoint)?.get(tool) ?? null
  }
}

const catalogs = new WeakMap<object, ToolCatalog>()

/** The tools the endpoints behind `storm` declared: one catalog per storm, whichever transport saw the `tools/list`. */
export function toolCatalogOf(storm: object): ToolCatalog {
  let catalog = catalogs.get(storm)
  if (!catalog) catalogs.set(storm, (catalog = new ToolCatalog()))
  return catalog
}
