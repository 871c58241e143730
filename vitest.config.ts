import { defineConfig } from 'vitest/config'

/**
 * CI's second Node line (.ci/run sets TOOLSTORM_CI_REPEAT on its Node 24 pass) skips what does not
 * depend on the Node version and costs minutes on 2 cores: the docs blocks (text parsed and compiled,
 * checked on Node 20) and the demo's CLI runs (the demo itself runs on Node 22, 24 and 26 in .ci/run).
 */
const repeatExclude = process.env.TOOLSTORM_CI_REPEAT ? ['test/docs/**', 'test/cli/demo.test.ts'] : []

export default defineConfig({
  test: {
    // The default output, and one line at the end naming the test groups skipped for something missing on this machine.
    reporters: ['default', './test/helpers/skipped-groups.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/ui/**', 'test/packaging/**', ...repeatExclude],
          environment: 'node',
          // Many cases start several processes (replicas, Redis, Python clients): about 10 s quiet,
          // and a CI run on a loaded 2-core machine saw such a case pass 30 s. A hang still ends.
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // End to end in Debian's Chromium (playwright-core); the web pages are built first if missing.
        test: {
          name: 'ui',
          include: ['test/ui/**/*.test.ts'],
          environment: 'node',
          globalSetup: ['test/ui/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 90_000,
          fileParallelism: false,
        },
      },
      {
        // npm pack, then installs of the tarball into fresh projects (registry msw/vitest, Node 20 and 24).
        test: {
          name: 'packaging',
          include: ['test/packaging/*.test.ts'],
          environment: 'node',
          testTimeout: 300_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
})
