import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { replayCassette } from '../../src/cassette/replay/replay-cassette.js'
import { createStorm } from '../../src/create-storm.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { runCli } from '../helpers/cli.js'
import { test as it } from '../helpers/file-fixtures.js'

/** The agent: a read retried after a 429, then a shipment (in this process, and as a script for the CLI). */
const AGENT = `let read = await fetch(base + '/items/a')
if (read.status === 429) read = await fetch(base + '/items/a')
const ship = await fetch(base + '/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order: 'o-1' }) })
return 'agent ' + read.status + ' ' + ship.status`
const agent = new Function('base', `return (async () => { ${AGENT} })()`) as (base: string) => Promise<string>

describe('recording from the library (#30)', { timeout: 60_000 }, () => {
  it('startProxy({ record }) and a recorder given as its observer store paths, as the CLI does: both replay in-process and with toolstorm replay', async ({ dir, upstream }) => {
    const file = path.join(dir, 'proxy.cassette.jsonl')
    const observed = path.join(dir, 'observer.cassette.jsonl')
    const storm = createStorm({ rules: [{ name: 'busy', route: 'GET /items/*', kind: 'rate_limit', calls: [1], delay: 1 }] })
    // The way: a recorder made by hand and passed as the observer.
    const recorder = createCassetteRecorder(storm)
    const proxy = await startProxy({ storm, targets: [upstream.url], record: file, observer: recorder.observer })
    expect(await agent(proxy.url)).toBe('agent 200 201')
    await proxy.close()
    await recorder.close()
    await recorder.save(observed)

    for (const saved of [file, observed]) {
      const cassette = await Cassette.load(saved)
      expect(cassette.header.source).toBe('proxy')
      expect(cassette.exchanges.map((e) => [e.request.url, e.response?.status])).toEqual([
        ['/items/a', 429],
        ['/items/a', 200],
        ['/ship', 201],
      ])
      // Another port than the one recorded: a path matches whatever origin the client names.
      const replay = replayCassette(cassette)
      try {
        expect(await agent('http://127.0.0.1:9')).toBe('agent 200 201')
      } finally {
        replay.dispose()
      }
      expect(replay.verdict().passed).toBe(true)
    }

    const script = path.join(dir, 'agent.mjs')
    await writeFile(script, `const base = process.env.TOOLSTORM_PROXY_URL\nconsole.log(await (async () => { ${AGENT} })())\n`)
    const replayed = await runCli(['replay', file, '--port', '0', '--admin-port', '0', '--', process.execPath, script])
    expect(replayed.stdout).toBe('agent 200 201\n')
    expect(replayed.stderr).toContain(`Replayed 3 of 3 exchange(s) from ${file}.`)
    expect(replayed.code).toBe(0)
  })
})
