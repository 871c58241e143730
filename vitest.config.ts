import { availableParallelism } from 'node:os'
import { defineConfig } from 'vitest/config'
import { NODE_SENSITIVE } from './test/node-sensitive.js'

/**
 * CI's second Node line (.ci/run sets TOOLSTORM_CI_REPEAT on its Node 24 pass) runs only the test
 * files whose behaviour depends on the Node version (test/node-sensitive.ts, a checked list); the
 * rest tests our own logic, the same on every Node, and ran on Node 20.
 */
const repeat = Boolean(process.env.TOOLSTORM_CI_REPEAT)

/**
 * Two test files at a time at least: vitest's default (one fewer than the cores) runs them one by
 * one on a 2-core machine, where most files wait on processes they started (servers, replicas,
 * Python clients, SDKs) more than they compute. Measured on this 2-core machine (#39).
 */
const workers = Math.max(2, availableParallelism() - 1)

export default defineConfig({
  test: {
    maxWorkers: workers,
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
          include: repeat ? [...NODE_SENSITIVE] : ['test/**/*.test.ts'],
          exclude: ['test/ui/**', 'test/packaging/**'],
          environment: 'node',
          // Many cases start several processes (replicas, Redis, Python clients): about 10 s quiet,
          // and a CI run on a loaded 2-core machine saw such a case pass 30 s. A hang still ends.
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // expect.poll waits for an event (a child's answer, a report field): 1 s, vitest's default, is
          // less than a child process takes to start on a loaded 2-core machine. A condition that never
          // holds still fails, after 15 s.
          expect: { poll: { timeout: 15_000 } },
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
          expect: { poll: { timeout: 15_000 } },
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
