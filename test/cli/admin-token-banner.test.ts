/**
 * The admin token in the banner of `toolstorm proxy`, `record`, `replay` and `mcp` (#36 item 12): it was
 * printed at every start, also when the user gave it (`--admin-token`), and so landed in every CI
 * log and log collector. Now a given token is never printed, and a generated one only to a
 * terminal or when `--print-admin-token` asks; programs read it from `--ready-json` / `--ready-file`.
 */
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { BIN, runCli } from '../helpers/cli.js'
import { closingChild, temporaryFolder } from '../helpers/teardown.js'
import { NOTES_SERVER, rawServer, wrappedCommand } from '../helpers/stdio-mcp.js'
import { startCli } from '../ui/spawn-cli.js'

const GIVEN = 'given-token-0123456789abcdef'
/** Reverse mode on a port nothing answers: three banner lines (proxy, token, dashboard), no CA line. */
const PROXY = ['proxy', '--target', 'http://127.0.0.1:9', '--port', '0', '--admin-port', '0']

async function until(done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 50) {
    if (waited > 20_000) throw new Error('waited 20 s')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function readyToken(file: string): Promise<string> {
  return (JSON.parse(await readFile(file, 'utf8')) as { token: string }).token
}

/** Run the CLI under a pseudo-terminal (util-linux `script`) until its banner shows `until`; returns what it printed. */
async function underTerminal(args: string[], until: RegExp): Promise<string> {
  const command = [process.execPath, BIN, ...args].map((word) => `'${word.replace(/'/g, `'\\''`)}'`).join(' ')
  const child = closingChild(spawn('script', ['-qfec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] }))
  let output = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${until} within 20 s: ${output}`)), 20_000)
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      if (until.test(output)) {
        clearTimeout(timer)
        resolve()
      }
    })
  })
  return output
}

describe('the admin token in the banner', () => {
  it('a token given with --admin-token is never printed, the banner says it is the one given', async () => {
    const cli = await startCli([...PROXY, `--admin-token=${GIVEN}`], 3)
    closingChild(cli.child)
    expect(cli.lines[1]).toMatch(/^admin token: the one given with --admin-token {2}\(Authorization: Bearer <token>;/)
    expect(cli.lines[2]).toMatch(/^dashboard: http:\/\/127\.0\.0\.1:\d+\/dashboard\/ \(add #token=<admin token> to the link\)$/)
    await cli.stop()
    expect(cli.lines.join('\n') + cli.stderr).not.toContain(GIVEN)
  })

  it('a generated token is not printed into output that is not a terminal; --ready-file has it', async () => {
    const dir = await temporaryFolder('toolstorm-token-')
    const ready = path.join(dir, 'ready.json')
    const cli = await startCli([...PROXY, '--ready-file', ready], 3)
    closingChild(cli.child)
    const token = await readyToken(ready)
    expect(cli.lines[1]).toMatch(/^admin token: generated, not printed: this output is not a terminal \(--print-admin-token prints it; --ready-file FILE writes it to a file\)/)
    await cli.stop()
    expect(cli.lines.join('\n') + cli.stderr).not.toContain(token)
  })

  it('--ready-json: the JSON line carries the token for the program that asked, the banner on stderr does not', async () => {
    const cli = await startCli([...PROXY, `--admin-token=${GIVEN}`, '--ready-json'], 1)
    closingChild(cli.child)
    expect(JSON.parse(cli.lines[0] as string)).toMatchObject({ ready: true, token: GIVEN })
    await cli.stop()
    expect(cli.stderr).toContain('admin token: the one given with --admin-token')
    expect(cli.stderr).not.toContain(GIVEN)
  })

  it('--print-admin-token prints a generated token and the dashboard link with it, into any output', async () => {
    const dir = await temporaryFolder('toolstorm-token-')
    const ready = path.join(dir, 'ready.json')
    const cli = await startCli([...PROXY, '--ready-file', ready, '--print-admin-token'], 3)
    closingChild(cli.child)
    const token = await readyToken(ready)
    expect(cli.lines[1]).toBe(`admin token: ${token}  (Authorization: Bearer <token>; tool servers report effects to ${cli.lines[0]?.split(' · admin ')[1]}/effects)`)
    expect(cli.lines[2]).toMatch(new RegExp(`^dashboard: http://127\\.0\\.0\\.1:\\d+/dashboard/#token=${token}$`))
    await cli.stop()
  })

  it('at a terminal a generated token is shown, a given one is not', async () => {
    const dir = await temporaryFolder('toolstorm-token-')
    const ready = path.join(dir, 'ready.json')
    const shown = await underTerminal([...PROXY, '--ready-file', ready], /dashboard: \S+/)
    const token = await readyToken(ready)
    expect(shown).toContain(`admin token: ${token}  (`)
    expect(shown).toContain(`#token=${token}`)
    const given = await underTerminal([...PROXY, `--admin-token=${GIVEN}`], /dashboard: [^\r\n]+\r?\n/)
    expect(given).toContain('admin token: the one given with --admin-token')
    expect(given).not.toContain(GIVEN)
  })

  it('record -- <command>: the banner (on stderr) leaves a generated token out; the command still gets it', async () => {
    const dir = await temporaryFolder('toolstorm-token-')
    const cassette = path.join(dir, 'c.jsonl')
    const result = await runCli(['record', cassette, '--target', 'http://127.0.0.1:9', '--port', '0', '--admin-port', '0', '--', process.execPath, '-e', 'process.stdout.write(process.env.TOOLSTORM_ADMIN_TOKEN)'], { cwd: dir })
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(/^[\w-]{16,}$/)
    expect(result.stderr).toContain('admin token: generated, not printed')
    expect(result.stderr).not.toContain(result.stdout)
  })

  it('toolstorm mcp: its stderr (an MCP client\'s log) names neither a given nor a generated token, unless asked', async () => {
    const dir = await temporaryFolder('toolstorm-token-')
    const ready = path.join(dir, 'ready.json')
    const given = rawServer(wrappedCommand(NOTES_SERVER, [`--admin-token=${GIVEN}`]))
    const generated = rawServer(wrappedCommand(NOTES_SERVER, ['--ready-file', ready]))
    const asked = rawServer(wrappedCommand(NOTES_SERVER, ['--print-admin-token', '--ready-file', `${ready}.asked`]))
    await Promise.all([given, generated, asked].map((server) => until(() => server.stderr().includes('toolstorm mcp'))))
    await Promise.all([given.end(), generated.end(), asked.end()])
    expect(given.stderr()).toMatch(/· token the one given with --admin-token/)
    expect(given.stderr()).not.toContain(GIVEN)
    expect(generated.stderr()).toMatch(/· token generated, not printed/)
    expect(generated.stderr()).not.toContain(await readyToken(ready))
    expect(asked.stderr()).toContain(`· token ${await readyToken(`${ready}.asked`)}`)
  })

  it('replay: a generated token is not printed into output that is not a terminal', async () => {
    const dir = await temporaryFolder('toolstorm-token-')
    const cassette = path.join(dir, 'c.jsonl')
    expect((await runCli(['record', cassette, '--target', 'http://127.0.0.1:9', '--port', '0', '--admin-port', '0', '--', process.execPath, '-e', ''], { cwd: dir })).code).toBe(0)
    const ready = path.join(dir, 'ready.json')
    const cli = await startCli(['replay', cassette, '--port', '0', '--admin-port', '0', '--ready-file', ready], 2)
    closingChild(cli.child)
    const token = await readyToken(ready)
    expect(cli.lines[1]).toMatch(/^admin token: generated, not printed/)
    await cli.stop()
    expect(cli.lines.join('\n') + cli.stderr).not.toContain(token)
  })
})
