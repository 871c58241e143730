import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
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
          exclude: ['test/ui/**', 'test/packaging/**'],
          environment: 'node',
          testTimeout: 30_000,
          hookTimeout: 30_000,
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
