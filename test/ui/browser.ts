/**
 * Debian's Chromium driven by playwright-core: never a downloaded browser. Each launch gets a
 * fresh profile (playwright makes a new temporary --user-data-dir itself and refuses the flag)
 * and the flags that keep Chromium off the network.
 */
import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'
import { runsHere } from '../helpers/skipped-groups.js'

export const CHROMIUM = process.env.TOOLSTORM_CHROMIUM ?? '/usr/bin/chromium'

/**
 * Whether the browser tests run: when Chromium is installed (`apt-get install chromium`; .ci/run
 * does it), and always in CI, where a missing browser must fail rather than skip.
 */
export const hasChromium = runsHere('the browser tests', existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install chromium`)

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage']

export interface LaunchedBrowser {
  readonly browser: Browser
  close(): Promise<void>
}

/** `proxy`: the HTTP proxy Chromium sends everything through, loopback included. */
export async function launchChromium(options: { proxy?: string } = {}): Promise<LaunchedBrowser> {
  const args = options.proxy ? [...FLAGS, `--proxy-server=${options.proxy}`, '--proxy-bypass-list=<-loopback>'] : FLAGS
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args, timeout: 60_000 })
  return {
    browser,
    async close() {
      await browser.close().catch(() => undefined)
    },
  }
}
