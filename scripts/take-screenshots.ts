/**
 * Regenerate the README's screenshots (docs/images/*.png) with Debian's Chromium:
 * `npm run build && tsx scripts/take-screenshots.ts`. A proxy, an upstream and some traffic
 * make the dashboard's content; the lab runs its default comparison.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { startUpstream } from '../test/helpers/upstream.js'
import { ROOT } from '../test/helpers/cli.js'
import { launchChromium } from '../test/ui/browser.js'
import { startCli } from '../test/ui/spawn-cli.js'

const OUT = path.join(ROOT, 'docs/images')

const rules = {
  seed: 42,
  maxCalls: 200,
  routes: { inventory: 'GET /items/:sku', ship: 'POST /ship', chat: 'POST /v1/chat/completions' },
  rules: [
    { name: 'inventory-busy', route: 'inventory', kind: 'rate_limit', calls: [2, 19], delay: 0.5 },
    { name: 'lost-receipt', route: 'ship', kind: 'response_lost', calls: [1] },
    { name: 'slow-model', route: 'chat', kind: 'latency', probability: 0.3, delay: 0.05 },
    { name: 'never-fires', route: 'GET /refunds/*', kind: 'timeout' },
  ],
}

await mkdir(OUT, { recursive: true })
let admin = ''
const upstream = await startUpstream({
  onCommit: async (name, key, request) => {
    await fetch(`${admin}/effects`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, key, call: request.headers['x-toolstorm-call'] }) })
  },
})
const rulesFile = path.join(os.tmpdir(), `toolstorm-screenshot-rules-${process.pid}.json`)
await writeFile(rulesFile, JSON.stringify(rules))
const proxy = await startCli(['proxy', '--target', upstream.url, '--port', '0', '--admin-port', '0', '--rules', rulesFile], 3)
const proxyUrl = /^toolstorm proxy (\S+) /.exec(proxy.lines[0] as string)?.[1] as string
admin = / · admin (\S+)$/.exec(proxy.lines[0] as string)?.[1] as string
const dashboard = /^dashboard: (\S+)$/.exec(proxy.lines[2] as string)?.[1] as string
const lab = await startCli(['lab', '--port', '0'], 1)
const labUrl = /^toolstorm lab (\S+) /.exec(lab.lines[0] as string)?.[1] as string

const send = (pathname: string, init: RequestInit = {}) => fetch(`${proxyUrl}${pathname}`, init).then((r) => r.arrayBuffer()).catch(() => undefined)
const { browser, close } = await launchChromium()
try {
  const page = await browser.newPage({ viewport: { width: 1360, height: 820 }, deviceScaleFactor: 1 })
  await page.goto(dashboard)
  await page.locator('.connection:has-text("Live")').waitFor()
  for (let i = 0; i < 24; i++) {
    await send(`/items/CLOUD-0${i % 3}`)
    if (i % 4 === 0) await send('/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-test', user: `agent-${i}`, messages: [] }) })
    if (i % 8 === 3) await send('/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order: 'order-1729' }) })
  }
  await page.waitForTimeout(500)
  await page.focus('.exchange-viewport')
  await page.keyboard.press('End')
  await page.keyboard.press('ArrowUp')
  await page.waitForTimeout(200)
  await page.screenshot({ path: path.join(OUT, 'dashboard.png') })

  await page.click('button:has-text("Edit rules")')
  const text = await page.inputValue('textarea')
  await page.fill('textarea', text.replace('"kind": "timeout"', '"kind": "time-out"').replace('"delay": 0.5', '"delay": -1'))
  await page.click('button:has-text("Apply rules")')
  await page.locator('.field-errors').waitFor()
  await page.locator('.field-errors li button').first().click()
  await page.screenshot({ path: path.join(OUT, 'dashboard-rules.png') })
  await page.close()

  const labPage = await browser.newPage({ viewport: { width: 1280, height: 1000 } })
  await labPage.goto(labUrl)
  await labPage.locator('table.comparison tbody tr').first().waitFor()
  await labPage.screenshot({ path: path.join(OUT, 'lab.png') })
  await labPage.setViewportSize({ width: 390, height: 844 })
  await labPage.evaluate(() => document.querySelector('.results')?.scrollIntoView())
  await labPage.screenshot({ path: path.join(OUT, 'lab-narrow.png') })
  await labPage.close()
} finally {
  await close()
  await lab.stop()
  await proxy.stop()
  await upstream.close()
}
console.log(`screenshots written to ${path.relative(ROOT, OUT)}/`)
