import { describe, expect, test } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { startCli } from '../ui/spawn-cli.js'

/** `lab`: one `toolstorm lab` process for the file, stopped after its last test. */
// eslint-disable-next-line no-empty-pattern -- vitest reads a fixture's dependencies from this pattern: none
const it = test.extend('lab', { scope: 'file' }, async ({}, { onCleanup }) => {
  const lab = await startCli(['lab', '--port', '0'], 1)
  onCleanup(async () => {
    await lab.stop()
  })
  return lab
})

describe('toolstorm lab', () => {
  it('serves the built lab page and its assets, and nothing else', async ({ lab }) => {
    const url = /^toolstorm lab (http:\/\/127\.0\.0\.1:\d+\/) \(runs in your browser; Ctrl-C stops the server\)$/.exec(lab.lines[0] as string)?.[1] as string
    expect(url).toBeTruthy()
    const page = await fetch(url)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
    const html = await page.text()
    expect(html).toContain('<div id="app"></div>')
    const script = /<script defer src="\.\/(assets\/[^"]+\.js)"><\/script>/.exec(html)?.[1]
    expect((await fetch(new URL(script as string, url))).headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect((await fetch(new URL('../package.json', url))).status).toBe(404)
    expect((await fetch(url, { method: 'POST' })).status).toBe(405)
  })

  it('says what to do when the port is taken or invalid', async ({ lab }) => {
    const port = new URL(/^toolstorm lab (\S+)/.exec(lab.lines[0] as string)?.[1] as string).port
    const taken = await runCli(['lab', '--port', port])
    expect(taken.code).toBe(2)
    expect(taken.stderr).toContain(`[toolstorm] Failed to start the lab: port ${port} on 127.0.0.1 is in use. Pass another --port, or --port 0 for any free one.`)
    const invalid = await runCli(['lab', '--port', '70000'])
    expect(invalid.code).toBe(2)
    expect(invalid.stderr).toContain('[toolstorm] --port: expected an integer 0-65535, got "70000".')
  })
})
