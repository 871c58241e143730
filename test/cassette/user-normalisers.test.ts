/**
 * The user's own normalisers (issue #36, item 10): a tool server mints ids of its own (`SHP-4821`,
 * `ord_9f8e…`) that change on every live run, so the model requests that carry its results miss on
 * replay unless a regular expression (`--normalize-pattern`) or a JSON path (`--normalize-path`)
 * says they compare equal. Kept in the cassette header, given on the command line, in-process
 * (`replayCassette`, `useCassette`, `cassetteHandlers`), and refused when malformed (exit 2).
 */
import { randomBytes, randomInt } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { replayCassette } from '../../src/cassette/replay/replay-cassette.js'
import { cassetteHandlers } from '../../src/cassette/replay/cassette-handlers.js'
import { runCli } from '../helpers/cli.js'
import { asOlderVersion } from '../helpers/cassette-fixtures.js'
import { test } from '../helpers/file-fixtures.js'
import { startModelUpstream, TOOL_TURNS, type ModelUpstream } from '../helpers/model-upstream.js'
import { closingServer } from '../helpers/teardown.js'
import { AGENT_SCRIPT, agentLoop } from '../helpers/agent-loop.js'

const server = ['--port', '0', '--admin-port', '0']
const PROMPT = 'Ship 2 boxes to Lyon.'
const PATTERNS = ['--normalize-pattern', 'SHP-\\d+', '--normalize-pattern', 'ord_[0-9a-f]+']

/** The tool: its answer holds a shipment and an order id it minted, new on every call. */
function startTool(): Promise<string> {
  const tool = closingServer(
    http.createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        const text = JSON.stringify({ shipment: `SHP-${randomInt(1000, 9999)}`, order: `ord_${randomBytes(6).toString('hex')}`, boxes: 2 })
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
        res.end(text)
      })
    }),
  )
  return new Promise((resolve) => tool.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(tool.address() as AddressInfo).port}`)))
}


/** The model, the tool and the agent script, for the file. */
// vitest reads what a fixture depends on from the destructuring of its first parameter: `{}` is none.
const it = test
  // eslint-disable-next-line no-empty-pattern
  .extend('model', { scope: 'file' }, async ({}, { onCleanup }) => {
    const model = await startModelUpstream()
    onCleanup(() => model.close())
    return model as ModelUpstream
  })
  .extend('agent', { scope: 'file' }, async ({ dir }) => {
    const file = path.join(dir, 'agent.mjs')
    await writeFile(file, AGENT_SCRIPT)
    return file
  })

const DONE = `agent: Done after ${TOOL_TURNS} tool calls.`

describe('user normalisers: a tool that mints its own ids, live on replay', { timeout: 180_000 }, () => {
  it('a recording with --normalize-pattern keeps them in the header and replays; without them the tool result misses', async ({ dir, model, agent }) => {
    const toolUrl = await startTool()
    const run = (args: string[]) => runCli([...args, ...server, '--', process.execPath, agent, PROMPT], { env: { TOOL_URL: toolUrl }, timeoutMs: 90_000 })
    const plain = path.join(dir, 'plain.cassette.jsonl')
    expect((await run(['record', plain, '--target', model.url])).stdout).toBe(`${DONE}\n`)
    const strict = await run(['replay', plain])
    expect(strict.stdout).toBe('model answered 422\n')
    expect(strict.stderr).toContain(`it differs from exchange 2 of ${plain} (POST /v1/chat/completions): body differs at $.messages[2].content:`)
    expect(strict.code).toBe(1)

    // Given at replay time, they stand in for the header's (which has none).
    const given = await run(['replay', plain, ...PATTERNS])
    expect([given.stdout, given.code]).toEqual([`${DONE}\n`, 0])

    const file = path.join(dir, 'patterns.cassette.jsonl')
    expect((await run(['record', file, '--target', model.url, ...PATTERNS])).stdout).toBe(`${DONE}\n`)
    const header = JSON.parse((await readFile(file, 'utf8')).split('\n')[0]!) as { version: number; match: Record<string, unknown> }
    expect(header.version).toBe(4)
    expect(header.match).toMatchObject({ normalize: [], normalizePatterns: ['SHP-\\d+', 'ord_[0-9a-f]+'], normalizePaths: [] })
    const replayed = await run(['replay', file])
    expect(replayed.stderr).toContain(`Replayed 3 of 3 exchange(s) from ${file}.`)
    expect([replayed.stdout, replayed.code]).toEqual([`${DONE}\n`, 0])

    // One pattern fewer: the order id still differs.
    const partial = await run(['replay', file, '--normalize-pattern', 'SHP-\\d+'])
    expect([partial.stdout, partial.code]).toEqual(['model answered 422\n', 1])
    // --normalize none turns the header's patterns off too.
    const off = await run(['replay', file, '--normalize', 'none'])
    expect([off.stdout, off.code]).toEqual(['model answered 422\n', 1])
  })

  it('a recording with --normalize-path keeps it in the header and replays', async ({ dir, model, agent }) => {
    const toolUrl = await startTool()
    const run = (args: string[]) => runCli([...args, ...server, '--', process.execPath, agent, PROMPT], { env: { TOOL_URL: toolUrl }, timeoutMs: 90_000 })
    const file = path.join(dir, 'path.cassette.jsonl')
    expect((await run(['record', file, '--target', model.url, '--normalize-path', '$.messages[*].content'])).stdout).toBe(`${DONE}\n`)
    expect((await Cassette.load(file)).header.match).toMatchObject({ normalizePatterns: [], normalizePaths: ['$.messages[*].content'] })
    const replayed = await run(['replay', file])
    expect([replayed.stdout, replayed.code]).toEqual([`${DONE}\n`, 0])
    // A narrower path leaves the tool result compared: it misses.
    const narrow = await run(['replay', file, '--normalize-path', '$.messages[0].content'])
    expect([narrow.stdout, narrow.code]).toEqual(['model answered 422\n', 1])
  })

  it.each([
    [['--normalize-pattern', 'SHP-(\\d+'], '--normalize-pattern: expected a regular expression that matches something (JavaScript syntax, such as SHP-\\d+), got /SHP-(\\d+/: Invalid regular expression: /SHP-(\\d+/: Unterminated group'],
    [['--normalize-pattern', '\\d*'], 'got /\\d*/: it matches the empty string'],
    [['--normalize-path', 'messages[*].content'], '--normalize-path: expected a JSON path ($ followed by .name, [\'name\'], [0], [*], .* or ..name, as "$.messages[*].content"), got "messages[*].content": a path starts with $'],
    [['--normalize-path', '$.messages[?(@.role)]'], 'got "$.messages[?(@.role)]": unexpected "[?(@.role)]"'],
  ])('refuses %j before the command starts, naming the flag and what was expected (exit 2)', async (flags, message) => {
    for (const command of [['record', 'never.cassette.jsonl', '--target', 'http://127.0.0.1:9'], ['replay', 'never.cassette.jsonl']]) {
      const refused = await runCli([...command, ...server, ...flags, '--', process.execPath, '-e', 'console.log("ran")'])
      expect(refused.stderr).toContain(message)
      expect(refused.stdout).not.toContain('ran')
      expect(refused.code).toBe(2)
    }
  })

  it('in-process: replayCassette takes them, and replayCassette and cassetteHandlers refuse a malformed one naming the option', async ({ dir, model, agent }) => {
    const toolUrl = await startTool()
    const file = path.join(dir, 'in-process.cassette.jsonl')
    const recorded = await runCli(['record', file, '--target', model.url, ...server, '--', process.execPath, agent, PROMPT], { env: { TOOL_URL: toolUrl }, timeoutMs: 90_000 })
    expect(recorded.code).toBe(0)
    const cassette = await Cassette.load(file)
    // Only the model's requests are answered from the cassette: the tool is called for real.
    const filter = (url: URL) => url.origin === model.url

    const strict = replayCassette(cassette, { filter })
    try {
      expect(await agentLoop(model.url, toolUrl, PROMPT)).toMatch(/^model answered 422: /)
    } finally {
      strict.dispose()
    }

    const modelCalls = model.requests.length
    const normalised = replayCassette(cassette, { filter, match: { normalizePatterns: ['SHP-\\d+', 'ord_[0-9a-f]+'] } })
    try {
      expect(await agentLoop(model.url, toolUrl, PROMPT)).toBe(DONE)
    } finally {
      normalised.dispose()
    }
    normalised.assertDone()
    expect(model.requests.length).toBe(modelCalls)

    const byPath = replayCassette(cassette, { filter, match: { normalizePaths: ['$..content'] } })
    try {
      expect(await agentLoop(model.url, toolUrl, PROMPT)).toBe(DONE)
    } finally {
      byPath.dispose()
    }
    byPath.assertDone()

    expect(() => replayCassette(cassette, { match: { normalizePatterns: ['('] } })).toThrow(/^Failed to call replayCassette\(\): option "match\.normalizePatterns\[0\]": expected a regular expression that matches something/)
    expect(() => cassetteHandlers(cassette, { match: { normalizePaths: ['messages'] } })).toThrow(/^Failed to call cassetteHandlers\(\): option "match\.normalizePaths\[0\]": expected a JSON path .*got "messages": a path starts with \$/)
  })

  it('a cassette written before them (version 3) still loads, with none; one of version 3 that holds them is refused', async ({ dir, model, agent }) => {
    const file = path.join(dir, 'v3.cassette.jsonl')
    const toolUrl = await startTool()
    await runCli(['record', file, '--target', model.url, ...server, '--', process.execPath, agent, PROMPT], { env: { TOOL_URL: toolUrl }, timeoutMs: 90_000 })
    // As toolstorm wrote it before version 4: the header counts the exchanges, which alone follow.
    const lines = asOlderVersion(await readFile(file, 'utf8'), 3).split('\n')
    const header = JSON.parse(lines[0]!) as { version: number; match: Record<string, unknown> }
    delete header.match.normalizePatterns
    delete header.match.normalizePaths
    await writeFile(file, [JSON.stringify({ ...header, version: 3 }), ...lines.slice(1)].join('\n'))
    const cassette = await Cassette.load(file)
    expect(cassette.header.match).toMatchObject({ normalizePatterns: [], normalizePaths: [] })
    expect((await runCli(['inspect', file])).code).toBe(0)

    const forged = path.join(dir, 'forged.cassette.jsonl')
    await writeFile(forged, [JSON.stringify({ ...header, version: 3, match: { ...header.match, normalizePatterns: ['SHP-\\d+'] } }), ...lines.slice(1)].join('\n'))
    await expect(Cassette.load(forged)).rejects.toMatchObject({ code: 'ERR_CASSETTE_INVALID', message: expect.stringContaining('line 1: $.match: normalizePatterns and normalizePaths need cassette version 4 (the header says 3)') })
  })
})
