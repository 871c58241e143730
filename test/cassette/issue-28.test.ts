/**
 * Issue #28: a replay never passes off a truncated body as whole. Measured from the outside, as
 * the issue did: binary responses of 2,000,000 and 3,000,000 bytes recorded with `toolstorm
 * record`'s defaults, then replayed by `toolstorm replay` with the upstream gone.
 */
import { createHash, randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { test } from '../helpers/file-fixtures.js'
import { PYTHON, hasPythonModules } from '../helpers/python.js'

const BODIES: Record<string, Buffer> = { '/two': randomBytes(2_000_000), '/three': randomBytes(3_000_000) }
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')
const server = ['--port', '0', '--admin-port', '0']

/** The agent downloads both files and prints what it got: status, bytes and digest, or the error. */
const NODE_AGENT = `import { createHash } from 'node:crypto'
for (const p of ['/two', '/three']) {
  try {
    const response = await fetch(process.env.TOOLSTORM_PROXY_URL + p)
    const bytes = Buffer.from(await response.arrayBuffer())
    console.log(p, response.status, bytes.length, createHash('sha256').update(bytes).digest('hex'))
  } catch (error) {
    console.log(p, 'error', error.cause?.code ?? error.cause?.message ?? error.message)
  }
}
`

/** The same agent in Python (requests honours HTTP_PROXY: forward mode). */
const PYTHON_AGENT = `import hashlib, sys
import requests
for p in ['/two', '/three']:
    try:
        r = requests.get(sys.argv[1] + p, timeout=60)
        print(p, r.status_code, len(r.content), hashlib.sha256(r.content).hexdigest())
    except requests.RequestException as e:
        print(p, 'error', type(e).__name__, e)
`

/** `agent` and `pythonAgent`: both written once into the file's folder. */
const it = test
  .extend('agent', { scope: 'file' }, async ({ dir }) => {
    const agent = path.join(dir, 'agent.mjs')
    await writeFile(agent, NODE_AGENT)
    return agent
  })
  .extend('pythonAgent', { scope: 'file' }, async ({ dir }) => {
    const pythonAgent = path.join(dir, 'agent.py')
    await writeFile(pythonAgent, PYTHON_AGENT)
    return pythonAgent
  })

/** What the helpers below read: the file's folder and its agents. */
type Agents = { dir: string; agent: string; pythonAgent: string }

/** Record the agent against a fresh upstream, which is gone once the recording is written. */
async function recordAgent({ dir, agent, pythonAgent }: Agents, file: string, flags: string[] = [], python = false) {
  const upstream = http.createServer((req, res) => {
    const body = BODIES[req.url ?? '']
    if (!body) return res.writeHead(404).end()
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length })
    res.end(body)
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  try {
    if (python) return { url, ...(await runCli(['record', file, ...server, ...flags, '--', PYTHON, pythonAgent, url], { env: pythonEnv(dir) })) }
    return { url, ...(await runCli(['record', file, '--target', url, ...server, ...flags, '--', process.execPath, agent])) }
  } finally {
    await new Promise((resolve) => upstream.close(resolve))
  }
}

/** Forward mode for Python: every request through HTTP_PROXY, and the CA (made for CONNECT) in the test's folder. */
const pythonEnv = (dir: string) => ({ NO_PROXY: '', no_proxy: '', TOOLSTORM_CA_DIR: path.join(dir, 'ca') })

const whole = `/two 200 2000000 ${sha256(BODIES['/two']!)}\n/three 200 3000000 ${sha256(BODIES['/three']!)}\n`

describe('issue 28: a replay never passes off a truncated body as whole', { timeout: 120_000 }, () => {
  it('records 2,000,000- and 3,000,000-byte binary responses whole by default and replays them byte for byte', async ({ dir, agent, pythonAgent }) => {
    const file = path.join(dir, 'default.cassette.jsonl')
    const recorded = await recordAgent({ dir, agent, pythonAgent }, file)
    expect(recorded.stdout).toBe(whole)
    expect(recorded.code).toBe(0)
    expect(recorded.stderr).not.toContain('cut')

    const replayed = await runCli(['replay', file, ...server, '--', process.execPath, agent])
    expect(replayed.stdout).toBe(whole)
    expect(replayed.stderr).toContain(`Replayed 2 of 2 exchange(s) from ${file}.`)
    expect(replayed.code).toBe(0)
  })

  it('says at stop which bodies were cut past --body-limit, and their replay breaks off and fails the verdict', async ({ dir, agent, pythonAgent }) => {
    const file = path.join(dir, 'cut.cassette.jsonl')
    const recorded = await recordAgent({ dir, agent, pythonAgent }, file, ['--body-limit', '1000000'])
    expect(recorded.stdout).toBe(whole)
    expect(recorded.stderr).toContain(
      '2 bodies were cut at the body limit (1000000 bytes): GET /two (1 response), GET /three (1 response). Replay breaks them off and fails unless --allow-truncated; record with --body-limit 3000000 to keep them whole.',
    )

    const replayed = await runCli(['replay', file, ...server, '--', process.execPath, agent])
    // The client sees the recorded head, the stored prefix, then the connection ends mid-body.
    expect(replayed.stdout).toBe('/two error UND_ERR_SOCKET\n/three error UND_ERR_SOCKET\n')
    expect(replayed.stderr).toContain('  1  1  GET /two    GET /two    truncated: 1000000 of 2000000 bytes recorded')
    expect(replayed.stderr).toContain('(ERR_CASSETTE_TRUNCATED)')
    expect(replayed.code).toBe(1)

    const allowed = await runCli(['replay', file, ...server, '--allow-truncated', '--', process.execPath, agent])
    expect(allowed.stdout).toBe('/two error UND_ERR_SOCKET\n/three error UND_ERR_SOCKET\n')
    expect(allowed.code).toBe(0)
  })

  it.runIf(hasPythonModules('requests'))('keeps the recorded content-length of a cut body: Python requests through HTTP_PROXY reads it short', async ({ dir, agent, pythonAgent }) => {
    const file = path.join(dir, 'python.cassette.jsonl')
    const recorded = await recordAgent({ dir, agent, pythonAgent }, file, ['--body-limit', '1000000'], true)
    expect(recorded.stdout).toBe(whole)
    expect(recorded.stderr).toContain('2 bodies were cut at the body limit (1000000 bytes)')

    const replayed = await runCli(['replay', file, ...server, '--', PYTHON, pythonAgent, recorded.url], { env: pythonEnv(dir) })
    expect(replayed.stdout).toBe(
      "/two error ChunkedEncodingError ('Connection broken: IncompleteRead(1000000 bytes read, 1000000 more expected)', IncompleteRead(1000000 bytes read, 1000000 more expected))\n" +
        "/three error ChunkedEncodingError ('Connection broken: IncompleteRead(1000000 bytes read, 2000000 more expected)', IncompleteRead(1000000 bytes read, 2000000 more expected))\n",
    )
    expect(replayed.stderr).toContain('(ERR_CASSETTE_TRUNCATED)')
    expect(replayed.code).toBe(1)
  })
})
