/**
 * 10,000 exchanges stream into the dashboard: the list is virtualised (only the rows in view are
 * in the DOM) and renders are batched (the page renders a few times a second, not once per
 * exchange), and a page opened late gets the whole run. These are structural checks that hold
 * on any machine; the frame and main-thread timings are `npm run bench -- dashboard`.
 */
import { describe, expect, it } from 'vitest'
import { hasChromium } from './browser.js'
import { measureDashboardLoad } from './dashboard-load.js'

const EXCHANGES = 10_000

describe.skipIf(!hasChromium)('the dashboard at scale', () => {
  it(`keeps ${EXCHANGES.toLocaleString('en')} live exchanges virtualised and renders them in batches, not per exchange`, async () => {
    const load = await measureDashboardLoad(EXCHANGES)
    console.log(`[dashboard scale] ${EXCHANGES} exchanges: ${load.renders} renders, ${load.rowsInDom} rows in the DOM`)
    expect(load.rowsInDom).toBeGreaterThan(10)
    expect(load.rowsInDom).toBeLessThan(80)
    expect(load.idsAfterJump).toContain(5_001)
    // A page that rendered per exchange would change the stats line about 10,000 times.
    expect(load.renders).toBeGreaterThan(0)
    expect(load.renders).toBeLessThan(EXCHANGES / 20)
  })
})
