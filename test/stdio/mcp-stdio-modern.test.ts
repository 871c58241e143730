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
import { Client, MissingRequiredClientCapabilityError, UnsupportedProtocolVersionError } from '@modelcontextprotocol/client'
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

  it('input_required: the retry that brings the input is the same call (one ordinal, one rule decision, one entry in the report with both rounds), so rules count logical calls', async () => {
    const folder = await temporaryFolder('toolstorm-modern-')
    const report = path.join(folder, 'report.json')
    const notes = path.join(folder, 'notes.txt')
    await writeFile(notes, '')
    // #2 is the second note: the first note's retry is still call #1.
    const rules = await rulesFile(folder, [{ name: 'second-note-fails', route: 'tools/call create_note', kind: 'tool_error', message: 'refused', calls: [2] }])
    const client = await modernClient(wrappedCommand(MODERN_SERVER, ['--rules', rules, '--report', report]), { NOTES_FILE: notes })
    expect(textOf(await client.callTool({ name: 'create_note', arguments: { key: 'order-1' } }))).toBe('noted order-1')
    // A fault before the server: no input_required, so no retry; the call is one round.
    expect(await client.callTool({ name: 'create_note', arguments: { key: 'order-2' } })).toEqual({ content: [{ type: 'text', text: 'refused' }], isError: true })
    expect(textOf(await client.callTool({ name: 'create_note', arguments: { key: 'order-3' } }))).toBe('noted order-3')
    await client.close()
    expect(await readFile(notes, 'utf8')).toBe('order-1\norder-3\n')
    const written = await readJson<Report>(report)
    expect(written.calls.map((call) => [call.id, call.route, call.ordinal, call.fault, call.outcome, call.mcp?.outcome, call.mcp?.rounds?.length ?? 0])).toEqual([
      [1, 'tools/call create_note', 1, null, 'response', 'result', 1],
      [2, 'tools/call create_note', 2, 'second-note-fails', 'response', 'isError', 0],
      [3, 'tools/call create_note', 3, null, 'response', 'result', 1],
    ])
    // Each retried call names the round that asked for input by its request id, and its own id is the retry's.
    for (const call of [written.calls[0]!, written.calls[2]!]) {
      expect(call.mcp!.rounds).toEqual([{ id: expect.any(Number), outcome: 'input_required' }])
      expect(call.mcp!.rounds![0]!.id).not.toBe(call.mcp!.id)
      expect(call.mcp!.arguments).toEqual({ key: call === written.calls[0] ? 'order-1' : 'order-3' })
    }
    expect(written.coverage['second-note-fails']).toEqual({ eligible: 1, selected: 1, triggered: 1 })
  })

  it('protocol_error answers the revision\'s refusals (-32022, -32021, -32020) with their data; the client raises the first two as its typed errors and recovers from a header mismatch by listing the tools and retrying; the server never sees a refused call', async () => {
    const folder = await temporaryFolder('toolstorm-modern-')
    const report = path.join(folder, 'report.json')
    const rules = await rulesFile(folder, [
      { name: 'old-server', route: 'tools/call count', kind: 'protocol_error', error: 'unsupported_version', supported: ['2025-11-25', '2025-06-18'], calls: [1] },
      { name: 'needs-sampling', route: 'tools/call count', kind: 'protocol_error', error: 'missing_capability', capabilities: { sampling: {} }, calls: [2] },
      { name: 'headers', route: 'tools/call count', kind: 'protocol_error', error: 'header_mismatch', calls: [3] },
    ])
    const client = await modernClient(wrappedCommand(MODERN_SERVER, ['--rules', rules, '--report', report]), {})
    const version = await client.callTool({ name: 'count', arguments: {} }).catch((caught: unknown) => caught)
    expect(version).toBeInstanceOf(UnsupportedProtocolVersionError)
    expect(version).toMatchObject({ code: -32022, supported: ['2025-11-25', '2025-06-18'], requested: '2026-07-28' })
    const capability = await client.callTool({ name: 'count', arguments: {} }).catch((caught: unknown) => caught)
    expect(capability).toBeInstanceOf(MissingRequiredClientCapabilityError)
    expect(capability).toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } })
    // -32020 is recovered by the client itself: it lists the tools again (the headers come from their declarations) and retries the call once.
    expect(textOf(await client.callTool({ name: 'count', arguments: {} }))).toBe('1')
    // The server ran none of the three refused calls: its counter went on from 1.
    expect(textOf(await client.callTool({ name: 'count', arguments: {} }))).toBe('2')
    await client.close()
    const calls = (await readJson<Report>(report)).calls
    expect(calls.map((call) => [call.route, call.ordinal, call.fault, call.mcp?.outcome])).toEqual([
      ['tools/call count', 1, 'old-server', 'error'],
      ['tools/call count', 2, 'needs-sampling', 'error'],
      ['tools/call count', 3, 'headers', 'error'],
      ['tools/list', 1, null, 'result'],
      ['tools/call count', 4, null, 'result'],
      ['tools/call count', 5, null, 'result'],
    ])
  })
})
