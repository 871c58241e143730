/**
 * The JS options objects are checked as the CLI checks its flags: a typo is refused before anything
 * starts, with the function, the field, a did-you-mean and ERR_CONFIG_INVALID; functions and
 * objects the caller made pass through untouched.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { setupServer } from 'msw/node'
import { Agent } from 'undici'
import { describe, expect, it, onTestFinished } from 'vitest'
import { Cassette } from '../../src/cassette/format/cassette.js'
import { createCassetteRecorder } from '../../src/cassette/record/cassette-recorder.js'
import { cassetteHandlers } from '../../src/cassette/replay/cassette-handlers.js'
import { replayCassette } from '../../src/cassette/replay/replay-cassette.js'
import { startReplayServer } from '../../src/proxy/replay/replay-server.js'
import { VirtualClock } from '../../src/engine/clock.js'
import type { ExchangeObserver } from '../../src/engine/exchange-flow.js'
import { createStorm } from '../../src/create-storm.js'
import { ConfigError } from '../../src/errors.js'
import { intercept } from '../../src/interceptors/intercept.js'
import { stormHandlers } from '../../src/interceptors/msw-handlers.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { test as fixtureTest } from '../../src/vitest/index.js'

/** The error `run` throws (or rejects with), as a ConfigError. */
async function refusal(run: () => unknown): Promise<ConfigError> {
  try {
    await run()
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError)
    return error as ConfigError
  }
  throw new Error('expected the options to be refused')
}

describe('JS options objects', () => {
  it('startProxy() refuses a misspelt option with a did-you-mean, before it listens', async () => {
    const error = await refusal(() => startProxy({ adminPrt: 0 } as never))
    expect(error.code).toBe('ERR_CONFIG_INVALID')
    expect(error.message).toMatch(/^Failed to call startProxy\(\): unknown option "adminPrt" \(did you mean "adminPort"\?\)\. See .*api\.md/)
  })

  it('startProxy() names the field and what was expected for a value of the wrong type', async () => {
    const error = await refusal(() => startProxy({ port: '8080' } as never))
    expect(error.message).toContain('option "port": expected number, received string')
    const nested = await refusal(() => startProxy({ connectPorts: [443, 'x'] } as never))
    expect(nested.message).toContain('option "connectPorts[1]": expected number')
  })

  it('startProxy() takes functions and objects the caller made as they are', async () => {
    const seen: string[] = []
    const observer: ExchangeObserver = { onUpstreamHead: (exchange) => void seen.push(exchange.id) }
    const dispatcher = new Agent()
    const proxy = await startProxy({ targets: ['http://127.0.0.1:9'], storm: createStorm({}), observer, dispatcher, warn: () => {}, onExchangeError: () => {}, dashboard: false, selfName: 'proxy' })
    onTestFinished(async () => {
      await proxy.close()
      await dispatcher.close()
    })
    expect(proxy.readyState).toBe('listening')
  })

  it('intercept() and stormHandlers() refuse a misspelt option, naming themselves', async () => {
    const storm = createStorm({})
    expect((await refusal(() => intercept(storm, { filtr: () => true } as never))).message).toMatch(/^Failed to call intercept\(\): unknown option "filtr" \(did you mean "filter"\?\)/)
    expect((await refusal(() => stormHandlers(storm, { tool: [] } as never))).message).toMatch(/^Failed to call stormHandlers\(\): unknown option "tool" \(did you mean "tools"\?\)/)
    expect((await refusal(() => intercept(storm, { targets: { 'https://api.test': 'not a url' } }))).message).toContain('option "targets.https://api.test"')
  })

  it('replayCassette(), cassetteHandlers() and startReplayServer() refuse a misspelt replay option', async () => {
    const cassette = Cassette.from({}, [])
    expect((await refusal(() => replayCassette(cassette, { allowUnsued: true } as never))).message).toContain('replayCassette(): unknown option "allowUnsued" (did you mean "allowUnused"?)')
    expect((await refusal(() => cassetteHandlers(cassette, { order: 'random' } as never))).message).toMatch(/cassetteHandlers\(\): option "order": .*"strict"/)
    expect((await refusal(() => startReplayServer(cassette, { mod: 'update' } as never))).message).toContain('startReplayServer(): unknown option "mod" (did you mean "mode"?)')
  })

  it('createCassetteRecorder() refuses a misspelt option or a wrong value before it opens its file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'toolstorm-recorder-options-'))
    onTestFinished(() => rm(dir, { recursive: true, force: true }))
    const file = path.join(dir, 'x.cassette.jsonl')
    const storm = createStorm({})
    const misspelt = await refusal(() => createCassetteRecorder(storm, { file, bodyLimt: 1024 } as never))
    expect(misspelt.code).toBe('ERR_CONFIG_INVALID')
    expect(misspelt.message).toMatch(/^Failed to call createCassetteRecorder\(\): unknown option "bodyLimt" \(did you mean "bodyLimit"\?\)\. See .*api\.md/)
    expect((await refusal(() => createCassetteRecorder(storm, { urlForm: 'path' } as never))).message).toMatch(/createCassetteRecorder\(\): option "urlForm": .*"origin"/)
    expect((await refusal(() => createCassetteRecorder(storm, { bodyLimit: -1 }))).message).toContain('createCassetteRecorder(): option "bodyLimit": ')
    expect((await refusal(() => createCassetteRecorder(storm, { match: { ignoreQuerry: ['t'] } } as never))).message).toContain('unknown option "ignoreQuerry"')
    expect(await readdir(dir)).toEqual([])
  })

  it('startProxy({ record }) refuses a misspelt recorder option, naming the record field', async () => {
    const error = await refusal(() => startProxy({ record: { file: 'never.cassette.jsonl', excludeHeader: ['x-trace'] } as never }))
    expect(error.code).toBe('ERR_CONFIG_INVALID')
    expect(error.message).toMatch(/^Failed to call startProxy\(\{ record \}\): unknown option "excludeHeader" \(did you mean "excludeHeaders"\?\)/)
  })

  it('an option no name is close to is refused without a guess', async () => {
    expect((await refusal(() => intercept(createStorm({}), { completelyElse: 1 } as never))).message).toMatch(/unknown option "completelyElse"\. See/)
  })

  it('valid in-process options work as before (MSW handlers with a clockless storm)', () => {
    const server = setupServer(...stormHandlers(createStorm({}), { filter: () => false, tools: [] }))
    server.listen({ onUnhandledRequest: 'bypass' })
    server.close()
    const interception = intercept(createStorm({}, { clock: new VirtualClock() }), { filter: () => false, targets: { 'https://api.test': 'http://127.0.0.1:1' } })
    interception.dispose()
    expect(interception.readyState).toBe('disposed')
  })
})

fixtureTest('the vitest fixture refuses a misspelt storm() option', async ({ storm }) => {
  expect((await refusal(() => storm({}, { requireTrigered: false } as never))).message).toContain('unknown option "requireTrigered" (did you mean "requireTriggered"?)')
  storm({}, { clock: new VirtualClock(), requireTriggered: false, intercept: false, source: 'rules.yaml' })
})
