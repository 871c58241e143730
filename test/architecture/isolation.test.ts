/**
 * The integration files that share a module graph per worker (vitest's `isolate: false`) are those
 * that leave nothing process-wide behind (test/isolation.ts): a file that patches node:http and
 * fetch, the global dispatcher, the OpenTelemetry globals or process.env runs isolated, and the
 * vitest config puts every integration file in exactly one of the two projects.
 */
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import config from '../../vitest.config.js'
import { CHANGES_PROCESS_STATE, integrationTestFiles, isolatedTestFiles } from '../isolation.js'

describe('which integration files run isolated', () => {
  it.each([
    ["import { setupServer } from 'msw/node'", 'MSW'],
    ["import { ClientRequestInterceptor } from '@mswjs/interceptors/ClientRequest'", 'the interceptors'],
    ['const interception = intercept(storm)', "toolstorm's in-process interception"],
    ["import { TRANSPORTS } from '../helpers/transports.js'", 'the transport matrix (in-process and MSW among them)'],
    ['await replayCassette(cassette, { storm })', 'an in-process replay'],
    ['setGlobalDispatcher(new Agent())', "undici's global dispatcher"],
    ['provider.register()', 'the OpenTelemetry global provider'],
    ["process.env.TOOLSTORM_SIDECAR = 'http://127.0.0.1:1'", 'process.env'],
    ['delete process.env.TOOLSTORM_SIDECAR', 'process.env'],
    ["process.on('unhandledRejection', seen)", 'a process listener'],
    ['vi.useFakeTimers()', 'fake timers'],
    ["vi.spyOn(console, 'warn')", 'a spy'],
  ])('isolates a file with `%s` (%s)', (source) => {
    expect(CHANGES_PROCESS_STATE.test(source)).toBe(true)
  })

  it.each([
    "const proxy = await startProxy(['--port', '0'])",
    'if (process.env.CI) expect(found).toBe(true)',
    "expect(process.env.PATH).not.toBe('')",
    'const run = await exploreCli([...SHARED], AGENT)',
  ])('shares the module graph for a file that only starts and reads: `%s`', (source) => {
    expect(CHANGES_PROCESS_STATE.test(source)).toBe(false)
  })

  it('finds the files of the suite that install an interception, and leaves most files shared', () => {
    const isolated = isolatedTestFiles()
    expect(isolated).toEqual(expect.arrayContaining(['test/interceptors/msw-handlers.test.ts', 'test/model-calls/model-call-parity.test.ts', 'test/claims/ai-sdk-telemetry.test.ts', 'test/vitest/use-cassette.test.ts']))
    expect(isolated.length).toBeLessThan(integrationTestFiles().length / 2)
  })

  it('puts every integration file in exactly one of the two projects of vitest.config.ts', () => {
    const projects = (config.test?.projects ?? []) as { test: { name: string, include: string[], exclude?: string[], isolate?: boolean } }[]
    const shared = projects.find((project) => project.test.name === 'integration')!.test
    const isolated = projects.find((project) => project.test.name === 'integration-isolated')!.test
    expect(shared.isolate).toBe(false)
    expect(isolated.isolate).not.toBe(false)
    const isolatedFiles = isolatedTestFiles()
    const inShared = (file: string) => shared.include.some((glob) => path.matchesGlob(file, glob)) && !shared.exclude!.some((glob) => path.matchesGlob(file, glob))
    const placed = integrationTestFiles().map((file) => ({ file, shared: inShared(file), isolated: isolated.include.includes(file) }))
    expect(placed).toEqual(integrationTestFiles().map((file) => ({ file, shared: !isolatedFiles.includes(file), isolated: isolatedFiles.includes(file) })))
  })
})
