/**
 * The test files CI's second Node line (Node 24, .ci/run) runs: those exercising behaviour that
 * changes with Node's version. Node's HTTP parser and node:http (the data plane's wire server), the
 * undici bundled behind the global fetch (every SDK test), TLS and OpenSSL, MSW's patching of
 * node:http and fetch, web streams. The rest of the suite runs once, on Node 20: it tests our logic,
 * the same on every Node. test/architecture/node-sensitive.test.ts checks this list (every entry
 * matches a file; every test file that imports Node's internals, TLS, MSW or the data plane's
 * HTTP/1.1 server directly is on it).
 */
export const NODE_SENSITIVE: readonly string[] = [
  // The data plane: wire server, fast path, real clients (node:http, undici, curl) through the proxy.
  'test/proxy/**/*.test.ts',
  // Replicas sharing runs through Redis: their data planes, with the same real clients.
  'test/state/**/*.test.ts',
  // TLS interception and verification.
  'test/https/**/*.test.ts',
  // MSW and @mswjs/interceptors in the test process.
  'test/interceptors/**/*.test.ts',
  // The SDKs over the global fetch, and web streams.
  'test/streams/**/*.test.ts',
  // Model calls: the provider SDKs over the global fetch, MSW and undici in-process.
  'test/model-calls/**/*.test.ts',
  // The vitest fixture (MSW in-process) and its cassettes.
  'test/vitest/storm-fixture.test.ts',
  'test/vitest/use-cassette.test.ts',
  'test/vitest/concurrent-storms.test.ts',
  'test/cassette/in-process.test.ts',
  'test/cassette/in-process-live.test.ts',
  'test/cassette/msw.test.ts',
  'test/cassette/streams.test.ts',
  'test/cassette/form-body-matching.test.ts',
  'test/api/options-validation.test.ts',
  'test/claims/trace-context.test.ts',
  'test/cli/concurrent-runs-survive.test.ts',
  'test/effects/one-effects-api.test.ts',
  'test/mcp/mcp-detection.test.ts',
  // The compile cache the CLI turns on where Node has one (22.1 and later).
  'test/cli/compile-cache.test.ts',
]
