/**
 * `toolstorm/explore`: which faults does the agent not survive? `explore({ command })` runs a
 * command next to a proxy, `explore({ run })` a function in this process through `intercept()`:
 * once with no fault, then once per call site × fault its kind of call can have. The outputs
 * (`formatExplore`, `formatJunit`, `formatHtml`) and `applyKnown` are the CLI's.
 * @see ../../docs/explore.md
 */
export { explore, BASELINE_RUN } from './explore.js'
export type { ExploreOptions, ExploreOutcome } from './explore.js'
export type { ExploreRunContext } from './in-process-runner.js'
export type { ExploreChecks } from './verdict.js'
export type { Progress as ExploreProgress } from './scheduler.js'
export { exploreResultSchema, EXPLORE_KIND } from './explore-result.js'
export type { ExploreResult, ExploreVariationResult, ExploreSkip, ExploreSite } from './explore-result.js'
export { exploreConfigSchema } from './explore-config.js'
export type { ExploreConfigInput } from './explore-config.js'
export { DEFAULT_FAULTS as DEFAULT_EXPLORE_FAULTS } from './fault-catalogue.js'
export type { FaultChoice } from './fault-catalogue.js'
export { formatExplore } from './format-matrix.js'
export { formatJunit } from './junit.js'
export { formatHtml } from './html-page.js'
export { applyKnown, allowListSchema } from './known-failures.js'
export type { KnownFailures } from './known-failures.js'
