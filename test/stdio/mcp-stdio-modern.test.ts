/**
 * The 2026-07-28 revision over stdio: the split SDK (`@modelcontextprotocol/client` and
 * `@modelcontextprotocol/server` 2.4), the client pinned to the revision (no handshake; a `_meta`
 * envelope on every request, results with a `resultType`), through `toolstorm mcp` against
 * fixtures/modern-mcp-server. Its `create_note` answers `input_required` (an elicitation) first and
 * commits on the retry that brings the answer.
 */
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import type { Report } from '../../src/engine/schema/report.js'
import { ROOT } from '../helpers/cli.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { readJson, rulesFile, wrappedCommand } from '../helpers/stdio-mcp.js'

const MODERN_SERVER = [process.execPath, path.join(ROOT, 'fixtures/modern-mcp-server/server.mjs')]

/** A 2026-07-28 client over `command` that accepts every elicitation; closed when the test ends. */
async function modernClient(command: readonly string[], env: Record<string, string>): Promise<Client> {
  const client = new Client({ name: 'modern', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } })
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { confirm: true } }))
  const [file, ...args] = command as [string, ...string[]]
  await client.connect(new StdioClientTransport({ command: file, args, env: { ...(process.env as Record<string, string>), ...env }, stderr: 'ignore', cwd: ROOT }))
  return client
}

function textOf(result: unknown): string {
  return (result as { content: Array<{ text: string }> }).content[0]!.text
}

describe('toolstorm mcp with the 2026-07-28 revision (split SDK 2.4)', () => {
  it('a tool_error is answered as a result of that revision (with its resultType), which the client accepts; the other calls pass as they do directly', async () => {
    const folder = await temporaryFolder('toolstorm-modern-')
    const report = path.join(folder, 'report.json')
    const rules = await rulesFile(folder, [{ name: 'count-fails', route: 'tools/call count', kind: 'tool_error', message: 'counter on fire', calls: [2] }])
    const client = await modernClient(wrappedCommand(MODERN_SERVER, ['--rules', rules, '--report', report]), {})
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28')
    expect(textOf(await client.callTool({ name: 'count', arguments: {} }))).toBe('1')
    // Without a resultType, this client refuses the result (INVALID_RESULT) instead of seeing the tool's failure.
    expect(await client.callTool({ name: 'count', arguments: {} })).toEqual({ content: [{ type: 'text', text: 'counter on fire' }], isError: true })
    expect(textOf(await client.callTool({ name: 'count', arguments: {} }))).toBe('2')
    await client.close()
    const calls = (await readJson<Report>(report)).calls
    expect(calls.map((call) => [call.route, call.ordinal, call.injected, call.mcp?.outcome])).toEqual([
      ['tools/call count', 1, false, 'result'],
      ['tools/call count', 2, true, 'isError'],
      ['tools/call count', 3, false, 'result'],
    ])
  })

  it('input_required: one logical call is two calls in the report (the round that asked for input, then the retry that brought it), and rules count them so', async () => {
    const folder = await temporaryFolder('toolstorm-modern-')
    const report = path.join(folder, 'report.json')
    const notes = path.join(folder, 'notes.txt')
    await writeFile(notes, '')
    // #2 is the retry round of the first logical call (the one that commits), not a second note.
    const rules = await rulesFile(folder, [{ name: 'second-round-fails', route: 'tools/call create_note', kind: 'tool_error', message: 'refused', calls: [2] }])
    const client = await modernClient(wrappedCommand(MODERN_SERVER, ['--rules', rules, '--report', report]), { NOTES_FILE: notes })
    expect(await client.callTool({ name: 'create_note', arguments: { key: 'order-1' } })).toEqual({ content: [{ type: 'text', text: 'refused' }], isError: true })
    expect(textOf(await client.callTool({ name: 'create_note', arguments: { key: 'order-2' } }))).toBe('noted order-2')
    await client.close()
    expect(await readFile(notes, 'utf8')).toBe('order-2\n')
    const calls = (await readJson<Report>(report)).calls
    expect(calls.map((call) => [call.route, call.ordinal, call.fault, call.mcp?.outcome])).toEqual([
      ['tools/call create_note', 1, null, 'result'],
      ['tools/call create_note', 2, 'second-round-fails', 'isError'],
      ['tools/call create_note', 3, null, 'result'],
      ['tools/call create_note', 4, null, 'result'],
    ])
  })
})
