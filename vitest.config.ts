import { availableParallelism } from 'node:os'
import path from 'node:path'
import { defineConfig } from 'vitest/config'
import { isolatedTestFiles } from './test/isolation.js'
import { NODE_SENSITIVE } from './test/node-sensitive.js'

/**
 * CI's second Node line (.ci/run sets TOOLSTORM_CI_REPEAT on its Node 24 pass) runs only the test
 * files whose behaviour depends on the Node version (test/node-sensitive.ts, a checked list); the
 * rest tests our own logic, the same on every Node, and ran on Node 20.
 */
const repeat = Boolean(process.env.TOOLSTORM_CI_REPEAT)

/**
 * One more test file at a time than cores: vitest's default (one fewer than the cores) runs them one
 * by one on a 2-core machine, where most files wait on processes they started (servers, replicas,
 * Python clients, SDKs) more than they compute. Measured on this 2-core machine (#39): one at a time
 * 834 s, two 545-591 s, three 483 s (the CPU then 88 % busy).
 */
const workers = availableParallelism() + 1

/**
 * Integration files that change process-wide state run isolated (test/isolation.ts); the others
 * share a module graph per worker, which saves re-importing the SDKs and the engine per file.
 */
const sensitive = (file: string) => NODE_SENSITIVE.some((pattern) => path.matchesGlob(file, pattern))
const isolated = isolatedTestFiles().filter((file) => !repeat || sensitive(file))
const integration = {
  environment: 'node' as const,
  // Many cases start several processes (replicas, Redis, Python clients): about 10 s quiet,
  // and a CI run on a loaded 2-core machine saw such a case pass 30 s. A hang still ends.
  testTimeout: 60_000,
  hookTimeout: 60_000,
  // expect.poll waits for an event (a child's answer, a report field): 1 s, vitest's default, is
  // less than a child process takes to start on a loaded 2-core machine. A condition that never
  // holds still fails, after 15 s.
  expect: { poll: { timeout: 15_000 } },
}
const integrationFiles = repeat ? [...NODE_SENSITIVE] : ['test/**/*.test.ts']
const notIntegration = ['test/ui/**', 'test/packaging/**']

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
          // Pure functions of one file each: nothing process-wide to leak, and a third of the time.
          isolate: false,
        },
      },
      {
        test: { name: 'integration', include: integrationFiles, exclude: [...notIntegration, ...isolated], isolate: false, ...integration },
      },
      {
        test: { name: 'integration-isolated', include: isolated, ...integration },
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
