/**
 * A fixture that fails for the bug (#40.5): `toolstorm replay` runs the contracts on what it served,
 * so a cassette of a run that committed twice fails its replay (`--no-contracts` skips them), and
 * `check` reads a replay's report.
 */
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { startUpstream } from '../helpers/upstream.js'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'
import { closing } from '../helpers/teardown.js'

const AGENT = `const base = process.env.TOOLSTORM_PROXY_URL
const ship = () => fetch(base + '/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order: 'o-7' }) }).then((r) => r.status)
const times = Number(process.argv[2])
const seen = []
for (let i = 0; i < times; i++) seen.push(await ship())
console.log(seen.join(' '))
`

describe('replay runs the contracts on what it served', { timeout: 120_000 }, () => {
  it('fails the replay of a run that committed the same shipment twice (exit 1, the effect named), passes it with --no-contracts, and check reads the replay report', async ({ dir }) => {
    let sidecar = { url: '', token: '' }
    // The tool server reports each commit to the proxy, as reportEffect does.
    const upstream = closing(
      await startUpstream({
        onCommit: async (name, key, req) => {
          await fetch(`${sidecar.url}/effects`, { method: 'POST', headers: { authorization: `Bearer ${sidecar.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, key, call: req.headers['x-toolstorm-call'] }) })
        },
      }),
    )
    const script = path.join(dir, 'agent.mjs')
    await writeFile(script, AGENT)
    const record = async (file: string, times: number) => {
      const proxy = await startProxy({ targets: [upstream.url], record: file })
      sidecar = { url: proxy.adminUrl, token: proxy.token }
      const { execFile } = await import('node:child_process')
      await new Promise<void>((resolve, reject) => execFile(process.execPath, [script, String(times)], { env: { ...process.env, TOOLSTORM_PROXY_URL: proxy.url } }, (error) => (error ? reject(error) : resolve())))
      await proxy.close()
    }
    const twice = path.join(dir, 'twice.jsonl')
    const once = path.join(dir, 'once.jsonl')
    await record(twice, 2)
    await record(once, 1)

    const report = path.join(dir, 'twice.replay.json')
    const replayed = await runCli(['replay', twice, '--port', '0', '--admin-port', '0', '--report', report, '--', process.execPath, script, '2'])
    expect(replayed.stdout).toBe('201 201\n')
    // Before #40 this replay passed (exit 0): a faithful replay of the bug.
    expect(replayed.code).toBe(1)
    expect(replayed.stderr).toContain(`Failed the contracts on what ${twice} served: run default: No duplicate side effects: `)
    expect(replayed.stderr).toContain('shipment key "o-7" committed 2 times (calls 1, 2)')
    expect(replayed.stderr).toContain('--no-contracts replays without them')

    const skipped = await runCli(['replay', twice, '--port', '0', '--admin-port', '0', '--no-contracts', '--', process.execPath, script, '2'])
    expect([skipped.code, skipped.stdout]).toEqual([0, '201 201\n'])

    // check reads the replay's report: the duplicate fails it, named.
    const checked = await runCli(['check', report])
    expect(checked.code, checked.stderr).toBe(1)
    expect(checked.stdout).toContain('shipment key "o-7" committed 2 times (calls 1, 2)')

    // A clean run replays and checks clean; a replay that diverged fails check on its own verdict.
    const clean = path.join(dir, 'once.replay.json')
    expect((await runCli(['replay', once, '--port', '0', '--admin-port', '0', '--report', clean, '--', process.execPath, script, '1'])).code).toBe(0)
    const checkedClean = await runCli(['check', clean])
    expect([checkedClean.code, checkedClean.stdout]).toEqual([0, expect.stringContaining('✓ Replay matched its cassette')])
    const diverged = path.join(dir, 'diverged.replay.json')
    expect((await runCli(['replay', once, '--port', '0', '--admin-port', '0', '--report', diverged, '--', process.execPath, script, '2'])).code).toBe(1)
    const checkedDiverged = await runCli(['check', diverged])
    expect([checkedDiverged.code, checkedDiverged.stdout]).toEqual([1, expect.stringContaining('✗ Replay matched its cassette')])
  })
})
