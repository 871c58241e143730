/**
 * Which integration test files get a module graph of their own (vitest's `isolate`), and which
 * share one per worker. Re-importing the SDKs, MSW and the engine for each of ~180 files cost about
 * 140 s of a 9-minute run on this 2-core machine (#39); a file that only starts servers and
 * processes and closes them (test/helpers/teardown.ts) leaves nothing behind for the next one.
 *
 * A file that changes what the whole test process sees while it runs (MSW or the interceptors
 * patching node:http and fetch, the global dispatcher, the OpenTelemetry globals, process.env,
 * process listeners, fake timers, spies and module mocks) stays isolated, so a failure halfway through
 * it cannot leak into another file. The files are found by reading them, not listed by hand: a new
 * test that installs an interception is isolated without anyone remembering to.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

/** What, written in a test file, changes process-wide state while the file runs. */
export const CHANGES_PROCESS_STATE = new RegExp([
  // MSW and @mswjs/interceptors, directly or through toolstorm's in-process entry points.
  String.raw`from\s+['"](?:msw|msw/node|@mswjs/interceptors[^'"]*)['"]`,
  String.raw`\bsetupServer\(`, String.raw`\bintercept\(`, String.raw`\bstormHandlers\(`, String.raw`\bcassetteHandlers\(`,
  String.raw`\breplayCassette\(`, String.raw`\buseCassette\b`, String.raw`\btoolstormTest\b`, String.raw`helpers/transports\.js`,
  // Globals of undici, OpenTelemetry and the runtime.
  String.raw`\bsetGlobalDispatcher\(`, String.raw`\.register\(\)`, String.raw`globalThis\.\w+\s*=[^=]`, String.raw`defineProperty\(globalThis`,
  String.raw`process\.env(?:\.\w+|\[[^\]]+\])\s*=[^=]`, String.raw`delete\s+process\.env`, String.raw`process\.(?:on|once|chdir)\(`,
  // vitest's own process-wide doubles.
  String.raw`\bvi\.(?:mock|doMock|spyOn|stubGlobal|stubEnv|useFakeTimers)\(`,
].join('|'))

const ROOT = path.resolve(import.meta.dirname, '..')

/** Every integration test file (test/**, not the ui and packaging projects), relative to the root. */
export function integrationTestFiles(): string[] {
  return readdirSync(path.join(ROOT, 'test'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .filter((file) => !file.startsWith('test/ui/') && !file.startsWith('test/packaging/'))
    .sort()
}

/** The integration test files that run isolated: those whose source changes process-wide state. */
export function isolatedTestFiles(): string[] {
  return integrationTestFiles().filter((file) => CHANGES_PROCESS_STATE.test(readFileSync(path.join(ROOT, file), 'utf8')))
}
