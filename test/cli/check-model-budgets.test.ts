import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import type { Report } from '../../src/engine/schema/report.js'
import { runCli } from '../helpers/cli.js'
import { test } from '../helpers/file-fixtures.js'
import { startModelScenario } from '../helpers/model-scenario.js'
import { answered } from '../helpers/model-upstream.js'

/** `file`: the report of two non-streamed chat completions and one streamed one cut by a fault, through the proxy. */
const it = test.extend('file', { scope: 'file' }, async ({ dir }) => {
  const file = path.join(dir, 'report.json')
  const scenario = await startModelScenario('reverse', { rules: [{ name: 'cut', route: 'POST /v1/chat/completions', kind: 'stream_cut', calls: [3], after: 1 }] })
  try {
    const post = (body: object) => fetch(`${scenario.base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [], ...body }) })
    await (await post({ model: 'gpt-x' })).json()
    await (await post({ model: 'gpt-x' })).json()
    await (await post({ model: 'gpt-x', stream: true })).text().catch(() => '')
    await writeFile(file, JSON.stringify(await scenario.settled()))
  } finally {
    await scenario.close()
  }
  return file
})

describe('toolstorm check and inspect with model calls', () => {
  it('fails the model-call budget with --max-model-calls', async ({ file }) => {
    const result = await runCli(['check', file, '--max-model-calls', '2'])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('✗ Model-call budget: 3 / 2 model calls')
  })

  it('fails the token budget closed with --max-tokens: the cut stream was answered in full without usage', async ({ file }) => {
    // The proxy read the cut stream on to its [DONE]: the provider finished an answer that carried no usage.
    const report = JSON.parse(await readFile(file, 'utf8')) as Report
    expect(report.calls[2]).toMatchObject({ outcome: 'error', error: 'STREAM_CUT', model: { inputTokens: null, outputTokens: null, usageMissing: true } })
    const result = await runCli(['check', file, '--max-model-calls', '3', '--max-tokens', '1000'])
    expect(result.stdout).toContain('✓ Model-call budget: 3 / 3 model calls')
    expect(result.stdout).toContain('✗ Token budget: Cannot count tokens: 1 model call(s) answered without usage')
    expect(result.code).toBe(1)
    const json = await runCli(['check', file, '--max-tokens', '35', '--json'])
    expect(json.code).toBe(1)
    expect(JSON.parse(json.stdout).checks).toContainEqual({ name: 'Token budget', passed: false, detail: 'Cannot count tokens: 1 model call(s) answered without usage' })
  })

  it('refuses a negative or fractional budget with exit code 2', async ({ file }) => {
    const result = await runCli(['check', file, '--max-tokens', '1.5'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('--max-tokens: expected a nonnegative integer, got "1.5".')
  })

  it('summarises model calls, tokens and cut streams', async ({ file }) => {
    const result = await runCli(['inspect', file])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain(`  model calls: 3 (1 streamed): ${answered('gpt-x')} 3`)
    expect(result.stdout).toContain('  tokens: 22 input, 14 output (1 call(s) without usage)')
    expect(result.stdout).toContain('  streams cut: 1')
  })
})
