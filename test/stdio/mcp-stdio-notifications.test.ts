/**
 * Notifications in a stdio replay: `toolstorm mcp --record` keeps the notifications the server
 * sends with each call (the reference `@modelcontextprotocol/server-everything`, whose
 * `trigger-long-running-operation` sends `notifications/progress` while it runs), and
 * `toolstorm mcp --replay` (no server) sends them before the call's answer, naming the live call's
 * progress token. Driven by the official TypeScript SDK client (`onprogress`).
 */
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Progress } from '@modelcontextprotocol/sdk/types.js'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { ROOT } from '../helpers/cli.js'
import { temporaryFolder } from '../helpers/teardown.js'
import { connectSdk, wrappedCommand } from '../helpers/stdio-mcp.js'

const EVERYTHING_SERVER = [path.join(ROOT, 'node_modules/.bin/mcp-server-everything'), 'stdio']

/** The long operation, with the progress the client was told of. */
async function longOperation(client: Client): Promise<{ result: unknown; progress: Progress[] }> {
  const progress: Progress[] = []
  const result = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps: 3 } }, undefined, { onprogress: (update) => void progress.push(update) })
  return { result, progress }
}

describe('toolstorm mcp: notifications in record and replay', () => {
  it('replays the progress notifications recorded with a call, before its answer and with the live progress token, with no server', async () => {
    const folder = await temporaryFolder('toolstorm-stdio-')
    const cassette = path.join(folder, 'session.cassette.jsonl')
    const recording = await connectSdk(wrappedCommand(EVERYTHING_SERVER, ['--record', cassette]))
    await recording.client.listTools()
    const recorded = await longOperation(recording.client)
    await recording.close()
    // The server sends three; this client (SDK 1.32) hands its callback those before the last, which
    // arrives with the answer (the same directly). The cassette has the three.
    expect(recorded.progress.length).toBeGreaterThan(0)

    const stored = (await Cassette.load(cassette)).exchanges.find((exchange) => exchange.route === 'tools/call trigger-long-running-operation')!
    // The server's `roots/list` (it asks a client that has roots) lands with whichever call runs when it comes: only the notifications are counted here.
    const notifications = stored.notifications?.filter(({ message }) => !Object.hasOwn(message as object, 'id'))
    expect(notifications?.map(({ when, progress, message }) => [when, progress, (message as { method: string }).method])).toEqual([
      ['during', true, 'notifications/progress'],
      ['during', true, 'notifications/progress'],
      ['during', true, 'notifications/progress'],
    ])

    // No tools/list this time: the call's id (and so its progress token) differs from the recording's.
    const replaying = await connectSdk(wrappedCommand([], ['--replay', cassette, '--order', 'any', '--allow-unused']))
    const replayed = await longOperation(replaying.client)
    await replaying.close()
    expect(replayed.result).toEqual(recorded.result)
    // Its callback hears the replayed updates (none without the live token): as when recorded, those
    // before the last, which comes with the answer (timing decides, so only their order is checked).
    expect(replayed.progress.length).toBeGreaterThan(0)
    expect(replayed.progress.every((update, index) => update.total === 3 && update.progress > (replayed.progress[index - 1]?.progress ?? 0))).toBe(true)
    expect(replaying.stderr()).toContain(`Replayed 2 of 3 exchange(s) from ${cassette}`)
  })
})
