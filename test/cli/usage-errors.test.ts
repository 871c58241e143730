import { describe, expect, it } from 'vitest'
import { runCli } from '../helpers/cli.js'

// Issue #15 item 4: a rejected flag stops the command before anything starts.
describe('toolstorm usage errors', () => {
  it('refuses a mistyped proxy flag with exit 2 before listening, naming the flag it meant', async () => {
    const result = await runCli(['proxy', '--tagret', 'http://127.0.0.1:9', '--port', '0', '--admin-port', '0'], { timeoutMs: 10_000 })
    expect(result.code).toBe(2)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain('[toolstorm] Unknown argument: tagret. Did you mean --target? Run "toolstorm --help" for usage.')
    expect(result.stderr).toContain('(ERR_USAGE)')
  })

  it('refuses an unknown demo flag before running the demo', async () => {
    const result = await runCli(['demo', '--frob', '--via', 'in-process'], { timeoutMs: 20_000 })
    expect(result.code).toBe(2)
    expect(result.stdout).toBe('')
    expect(result.stderr).toContain('Unknown argument: frob.')
  })

  it('suggests once per mistyped kebab-case flag, for each of several', async () => {
    const result = await runCli(['replay', 'x.jsonl', '--admin-prot', '3', '--sed', '4'], { timeoutMs: 10_000 })
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('Unknown arguments: admin-prot, adminProt, sed. Did you mean --admin-port for --admin-prot? Did you mean --seed for --sed?')
  })

  it('names the choices of schema and exits 2 for an unknown or missing name', async () => {
    const unknown = await runCli(['schema', 'nope'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('Given: "nope", Choices: "rules", "report", "cassette"')
    expect(unknown.stderr).not.toContain('Unexpected error')
    const missing = await runCli(['schema'])
    expect(missing.code).toBe(2)
    expect(missing.stderr).not.toContain('Unexpected error')
  })

  it('recommends the command closest to a mistyped one', async () => {
    const result = await runCli(['proxi'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('Unknown command "proxi". Did you mean proxy?')
  })
})
