/**
 * A three-turn agent loop (model → tool → model → tool → model) recorded with `toolstorm record`,
 * then replayed while its tool, called live, answers with new UUIDs, timestamps and response ids:
 * the normalisers chosen at record time keep it matching, and a changed prompt is named by its
 * exchange and JSON path.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { runCli } from '../helpers/cli.js'
import { startModelUpstream, TOOL_TURNS, type ModelUpstream } from '../helpers/model-upstream.js'
import { AGENT_SCRIPT } from '../helpers/agent-loop.js'

let dir: string
let model: ModelUpstream
let tool: http.Server
let toolUrl: string
let agent: string
const toolCalls: string[] = []
const server = ['--port', '0', '--admin-port', '0']

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-agent-loop-'))
  model = await startModelUpstream()
  // The tool: every answer has values that are new in every run.
  tool = http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      toolCalls.push(body)
      const text = JSON.stringify({ shipment: randomUUID(), at: new Date().toISOString(), created_at: Math.floor(Date.now() / 1000), ticket: `resp_${randomBytes(9).toString('hex')}`, boxes: 2 })
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
      res.end(text)
    })
  })
  await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve))
  toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}`
  // The agent: the model through toolstorm, the tool directly (it is not in the cassette).
  agent = path.join(dir, 'agent.mjs')
  await writeFile(agent, AGENT_SCRIPT)
})
afterAll(async () => {
  await model.close()
  await new Promise((resolve) => tool.close(resolve))
  await rm(dir, { recursive: true, force: true })
})

const env = () => ({ TOOL_URL: toolUrl })
const PROMPT = 'Ship 2 boxes to Lyon.'

async function record(name: string, extra: string[]): Promise<string> {
  const file = path.join(dir, name)
  const recorded = await runCli(['record', file, '--target', model.url, ...server, ...extra, '--', process.execPath, agent, PROMPT], { env: env(), timeoutMs: 90_000 })
  expect(recorded.stdout).toBe(`agent: Done after ${TOOL_TURNS} tool calls.\n`)
  expect(recorded.code).toBe(0)
  return file
}

describe('replay of an agent loop whose tool answers anew every run', { timeout: 180_000 }, () => {
  it('passes with the normalisers recorded in the header, fails without them naming the tool result, and names a changed prompt', async () => {
    const normalised = await record('normalised.cassette.jsonl', ['--normalize', 'ids,timestamps', '--normalize', 'uuids'])
    const cassette = await Cassette.load(normalised)
    expect(cassette.header.match.normalize).toEqual(['ids', 'timestamps', 'uuids'])
    expect(cassette.exchanges.map((exchange) => exchange.request.url)).toEqual(['/v1/chat/completions', '/v1/chat/completions', '/v1/chat/completions'])
    const modelCalls = model.requests.length

    // The model server is not asked again: replay answers from the cassette, the tool answers anew.
    const replayed = await runCli(['replay', normalised, ...server, '--', process.execPath, agent, PROMPT], { env: env(), timeoutMs: 90_000 })
    expect(replayed.stderr).toContain(`Replayed 3 of 3 exchange(s) from ${normalised}.`)
    expect(replayed.stdout).toBe(`agent: Done after ${TOOL_TURNS} tool calls.\n`)
    expect(replayed.code).toBe(0)
    expect(model.requests.length).toBe(modelCalls)

    // --live with --target: the live route goes to the target (here every exchange: none is replayed).
    const liveModel = await runCli(['replay', normalised, '--live', 'POST /v1/chat/*', '--target', model.url, ...server, '--', process.execPath, agent, PROMPT], { env: env(), timeoutMs: 90_000 })
    expect(liveModel.stdout).toBe(`agent: Done after ${TOOL_TURNS} tool calls.\n`)
    expect(liveModel.stderr).toContain(`Replayed 0 of 3 exchange(s) from ${normalised}, 3 live.`)
    expect(liveModel.code).toBe(0)
    expect(model.requests.length).toBe(modelCalls + 3)

    // --normalize none turns the header's normalisers off: the tool's new values miss.
    const off = await runCli(['replay', normalised, '--normalize', 'none', ...server, '--', process.execPath, agent, PROMPT], { env: env(), timeoutMs: 90_000 })
    expect(off.code).toBe(1)
    expect(off.stdout).toBe('model answered 422\n')
    expect(off.stderr).toContain(`it differs from exchange 2 of ${normalised} (POST /v1/chat/completions): body differs at $.messages[2].content:`)

    const plain = await record('plain.cassette.jsonl', [])
    const strict = await runCli(['replay', plain, ...server, '--', process.execPath, agent, PROMPT], { env: env(), timeoutMs: 90_000 })
    expect(strict.code).toBe(1)
    expect(strict.stdout).toBe('model answered 422\n')
    expect(strict.stderr).toContain(`it differs from exchange 2 of ${plain} (POST /v1/chat/completions): body differs at $.messages[2].content:`)

    const changed = await runCli(['replay', normalised, '--json', ...server, '--', process.execPath, agent, 'Ship 3 boxes to Lyon.'], { env: env(), timeoutMs: 90_000 })
    expect(changed.code).toBe(1)
    expect(changed.stderr).toContain(`it differs from exchange 1 of ${normalised} (POST /v1/chat/completions): body differs at $.messages[0].content: "Ship 2 boxes to Lyon." ≠ "Ship 3 boxes to Lyon."`)
    const report = JSON.parse(changed.stdout.slice(changed.stdout.indexOf('{')))
    expect(report.table[0].diff).toMatchObject({ position: 1, paths: [{ path: '$.messages[0].content', expected: '"Ship 2 boxes to Lyon."', seen: '"Ship 3 boxes to Lyon."' }], morePaths: 0 })
  })

  it('replays the model with --live on the tool route: the tool server sees exactly the recorded calls, the model server is down', async () => {
    // Forward mode: the agent sends both through HTTP_PROXY in absolute form.
    const forwardAgent = path.join(dir, 'forward-agent.mjs')
    await writeFile(
      forwardAgent,
      `import http from 'node:http'
const proxy = new URL(process.env.HTTP_PROXY)
const post = (url, body) => new Promise((resolve, reject) => {
  const request = http.request({ host: proxy.hostname, port: proxy.port, method: 'POST', path: url, headers: { host: new URL(url).host, 'content-type': 'application/json' } }, (res) => {
    let text = ''
    res.on('data', (chunk) => (text += chunk))
    res.on('end', () => resolve({ status: res.statusCode, text }))
  })
  request.on('error', reject)
  request.end(body)
})
const tools = [{ type: 'function', function: { name: 'ship', parameters: { type: 'object' } } }]
const messages = [{ role: 'user', content: process.argv[2] }]
for (let turn = 1; turn <= 5; turn++) {
  const answer = await post(process.env.MODEL_URL + '/v1/chat/completions', JSON.stringify({ model: 'gpt-test', messages, tools }))
  if (answer.status !== 200) { console.log('model answered', answer.status); process.exit(3) }
  const message = JSON.parse(answer.text).choices[0].message
  messages.push(message)
  if (!message.tool_calls) { console.log('agent:', message.content); process.exit(0) }
  for (const call of message.tool_calls) {
    const result = await post(process.env.TOOL_URL + '/ship', call.function.arguments)
    if (result.status !== 200) { console.log('tool answered', result.status); process.exit(5) }
    messages.push({ role: 'tool', tool_call_id: call.id, content: result.text })
  }
}
process.exit(4)
`,
    )
    const downModel = await startModelUpstream()
    const file = path.join(dir, 'live.cassette.jsonl')
    const forwardEnv = { TOOL_URL: toolUrl, MODEL_URL: downModel.url }
    const before = toolCalls.length
    const recorded = await runCli(['record', file, ...server, '--normalize', 'ids,timestamps,uuids', '--', process.execPath, forwardAgent, PROMPT], { env: forwardEnv, timeoutMs: 90_000 })
    expect(recorded.stdout).toBe(`agent: Done after ${TOOL_TURNS} tool calls.\n`)
    const recordedCalls = toolCalls.slice(before)
    expect(recordedCalls).toEqual(['{"turn":1}', '{"turn":2}'])
    expect((await Cassette.load(file)).exchanges.map((exchange) => exchange.request.url)).toEqual([
      `${downModel.url}/v1/chat/completions`,
      `${toolUrl}/ship`,
      `${downModel.url}/v1/chat/completions`,
      `${toolUrl}/ship`,
      `${downModel.url}/v1/chat/completions`,
    ])
    await downModel.close()

    const replayStart = toolCalls.length
    const replayed = await runCli(['replay', file, '--live', 'POST /ship', '--json', ...server, '--', process.execPath, forwardAgent, PROMPT], { env: forwardEnv, timeoutMs: 90_000 })
    expect(replayed.stdout).toContain(`agent: Done after ${TOOL_TURNS} tool calls.\n`)
    expect(replayed.stderr).toContain(`Replayed 3 of 5 exchange(s) from ${file}, 2 live.`)
    expect(replayed.code).toBe(0)
    expect(toolCalls.slice(replayStart)).toEqual(recordedCalls)
    const report = JSON.parse(replayed.stdout.slice(replayed.stdout.indexOf('{')))
    expect(report).toMatchObject({ passed: true, served: 3, live: 2, unused: 0 })
    expect(report.table.map((row: { result: string }) => row.result)).toEqual(['ok', 'live (sent to the network)', 'ok', 'live (sent to the network)', 'ok'])

    // Without --live the tool calls are replayed too: the tool server is not called.
    const replayStart2 = toolCalls.length
    const all = await runCli(['replay', file, ...server, '--', process.execPath, forwardAgent, PROMPT], { env: forwardEnv, timeoutMs: 90_000 })
    expect(all.code).toBe(0)
    expect(toolCalls.length).toBe(replayStart2)
  })

  it('refuses an unknown normaliser, or none with another name, before the command starts, naming the option and the names it takes (exit 2)', async () => {
    const refused = await runCli(['record', path.join(dir, 'never.cassette.jsonl'), '--target', model.url, ...server, '--normalize', 'ids,idz', '--', process.execPath, '-e', 'console.log("ran")'])
    expect(refused.stderr).toContain('--normalize: expected ids, timestamps, uuids (comma-separated) or none, got "idz"')
    expect(refused.stdout).not.toContain('ran')
    expect(refused.code).toBe(2)
    const mixed = await runCli(['replay', path.join(dir, 'never.cassette.jsonl'), ...server, '--normalize', 'none,ids'])
    expect(mixed.stderr).toContain('--normalize: "none" turns every normaliser off and takes no other name, got "none,ids"')
    expect(mixed.code).toBe(2)
  })
})
