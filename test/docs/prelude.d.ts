/**
 * Names the docs' TypeScript fragments use without declaring them: what the reader's own code
 * holds around the fragment (a storm, an agent, a tool server). A block that declares one of these
 * itself shadows it (each block is a module).
 */
declare const storm: import('toolstorm').Storm
declare const rules: import('toolstorm').StormConfigInput['rules']
declare const cassette: import('toolstorm/cassette').Cassette
/** The agent under test. */
declare const agent: { run(): Promise<unknown> }
/** The URL a test's agent calls. */
declare const url: string
/** An MSW tool handler's resolver (in-process.md). */
declare const ship: import('msw').HttpResponseResolver
/** The MCP tool server of docs/mcp.md, and its database. */
declare const server: import('@modelcontextprotocol/sdk/server/mcp.js').McpServer
declare const db: { createShipment(orderId: string): Promise<Record<string, unknown>> }
declare const z: typeof import('zod').z
/** Whether the agent finished its task (contracts.md's own check). */
declare const done: boolean
