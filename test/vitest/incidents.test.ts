/**
 * The vitest fixture's incidents (`toolstormIncidents` through vitest's `provide`, or
 * TOOLSTORM_INCIDENTS): a suite run (fixtures/vitest-incidents, spawned) keeps the tests that went
 * wrong as incident cassettes, with the proxy's flight recorder and its bounds, each replaying offline.
 */
import { spawn } from 'node:child_process'
import { readFile, readdir } from 'node:fs/promises'
import http from 'node:http'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../helpers/cli.js'
import { closingServer, temporaryFolder } from '../helpers/teardown.js'
import { Cassette, replayCassette } from '../../src/cassette/index.js'
import { fixtureIncidents } from '../../src/vitest/test-incidents.js'
import type { IncidentEntry } from '../../src/incidents/incident-store.js'

async function upstream(): Promise<{ url: string; server: http.Server }> {
  const server = closingServer(http.createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      res.setHeader('content-type', 'application/json')
      if (req.url === '/ship') {
        res.statusCode = 201
        res.end(JSON.stringify({ order: (JSON.parse(body) as { order: string }).order }))
      } else res.end('{"ok":true}')
    })
  }))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, server }
}

describe('toolstorm/vitest incidents', () => {
  it('keeps the failing tests (its own check failing one) and the one whose fault fired, each as a cassette of its run that replays offline', async () => {
    const dir = await temporaryFolder('toolstorm-vitest-incidents-')
    const server = await upstream()
    const output = path.join(dir, 'report.json')
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'fixtures/vitest-incidents/vitest.config.ts', '--reporter=json', `--outputFile=${output}`], {
        cwd: ROOT,
        stdio: 'ignore',
        env: { ...process.env, INCIDENTS_DIR: path.join(dir, 'incidents'), UPSTREAM: server.url },
      })
      child.on('close', resolve)
    })
    expect(code).toBe(1)
    const report = JSON.parse(await readFile(output, 'utf8')) as { testResults: Array<{ assertionResults: Array<{ title: string; status: string }> }> }
    expect(Object.fromEntries(report.testResults[0]!.assertionResults.map((r) => [r.title, r.status]))).toEqual({ ships: 'passed', 'ships and then fails': 'failed', 'recovers from a 503': 'passed', 'fails before any call': 'failed', 'a rule on a misspelled route never triggers': 'failed' })

    const folder = path.join(dir, 'incidents')
    const kept = (await readFile(path.join(folder, 'index.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as IncidentEntry)
    expect(kept.map(({ incident, why, calls, exchanges, dropped, routes }) => ({ name: incident.replace(/^\d{8}T\d{6}Z-/, ''), why, calls, exchanges, dropped, routes }))).toEqual([
      // Its window held its last 2 exchanges (windowExchanges: 2): the first is counted as dropped.
      { name: 'orders.spec-ships_and_then_fails.jsonl', why: ['marked'], calls: 2, exchanges: 2, dropped: 1, routes: ['GET /health', 'POST /ship'] },
      { name: 'orders.spec-recovers_from_a_503.jsonl', why: ['fault'], calls: 2, exchanges: 2, dropped: 0, routes: ['POST /ship'] },
      // Failed by the fixture's own check as the test finished: marked all the same.
      { name: 'orders.spec-a_rule_on_a_misspelled_route_never_triggers.jsonl', why: ['marked'], calls: 1, exchanges: 1, dropped: 0, routes: ['GET /health'] },
    ])
    expect(kept[2]!.detail[0]).toContain('a rule on a misspelled route never triggers failed: ')
    expect(kept[2]!.detail[0]).toContain('toolstorm contract failed: Fault exercised: typo: Triggered 0 time(s)')
    expect(kept[0]!.detail[0]).toBe("vitest: fixtures/vitest-incidents/orders.spec.ts > ships and then fails failed: the agent shipped the wrong order: expected 'o-bad' to be 'o-good' // Object.is equality")
    expect((await readdir(folder)).sort()).toEqual([...kept.flatMap(({ incident }) => [incident, incident.replace('.jsonl', '.report.json')]), 'index.jsonl'].sort())

    // Offline: the upstream is gone, and the incident answers as it did.
    server.server.closeAllConnections()
    await new Promise((resolve) => server.server.close(resolve))
    const cassette = await Cassette.load(path.join(folder, kept[0]!.incident))
    const replay = replayCassette(cassette)
    try {
      expect(await (await fetch(`${server.url}/health`)).json()).toEqual({ ok: true })
      const answer = await fetch(`${server.url}/ship`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order: 'o-bad' }) })
      expect([answer.status, await answer.json()]).toEqual([201, { order: 'o-bad' }])
    } finally {
      replay.dispose()
    }
    replay.assertDone()
  })

  it('takes the folder from TOOLSTORM_INCIDENTS, and refuses a misspelled bound by name', () => {
    expect(fixtureIncidents(undefined, { TOOLSTORM_INCIDENTS: 'kept' })).toEqual({ dir: path.resolve('kept') })
    expect(fixtureIncidents(undefined, {})).toBeNull()
    expect(() => fixtureIncidents({ dir: 'kept', windowExchange: 2 } as never, {})).toThrow(/toolstormIncidents.*windowExchange.*windowExchanges/)
  })
})
