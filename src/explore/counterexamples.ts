/**
 * A counterexample per failure (`--out DIR`), Filibuster's counterexample file made a fixture:
 * `DIR/<id>/rules.json` (the run's rules and seed), `cassette.jsonl` (what the run sent and got,
 * redacted like every cassette), `variation.json` (its row) and `README.md` with the commands
 * that reproduce it live and offline. A failure becomes a regression test in one copy.
 */
import { mkdir } from 'node:fs/promises'
import path from 'node:path'
import { Cassette } from '../cassette/format/cassette.js'
import { parseConfig } from '../create-storm.js'
import { writeFileAtomic } from '../io/write-file-atomic.js'
import type { ExploreResult, ExploreVariationResult } from './explore-result.js'
import { describeVariation, rulesFor, type RunBase, type Variation } from './variation.js'

export interface CounterexampleOptions {
  readonly dir: string
  /** The failures whose cassette was written (`writeCounterexampleCassette`), by variation id. */
  readonly cassettes: ReadonlySet<string>
  /** The command explored (null in-process: the commands are then the library's). */
  readonly command: readonly string[] | null
  /** Explore's flags that change the space (`--faults`, `--config`, `--target` …), repeated in the live command. */
  readonly rerunFlags: readonly string[]
  readonly rules: (id: string) => Variation | null
  readonly base: RunBase
}

/** A word as a POSIX shell reads it back. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}

function commandLine(words: readonly string[]): string {
  return words.map(shellWord).join(' ')
}

/** The explore flags that are the proxy's (where it forwards and listens, how it reaches HTTPS upstreams): the proxy command repeats them. */
const PROXY_FLAGS = new Set(['--target', '--host', '--port', '--admin-port', '--ca-dir', '--connect-port', '--upstream-ca'])

function proxyFlags(flags: readonly string[]): string[] {
  return flags.flatMap((flag, index) => (PROXY_FLAGS.has(flag) && index + 1 < flags.length ? [flag, flags[index + 1]!] : []))
}

/** The checks a replay cannot judge again: on the commits alone, which the cassette keeps as they were (claims are the agent's, made again). */
const COMMIT_CHECKS = new Set(['No duplicate side effects'])

/** The commands that reproduce one failure. */
export function reproduceCommands(variation: ExploreVariationResult, folder: string, options: Pick<CounterexampleOptions, 'command' | 'rerunFlags'>): { live: string; proxy: string; offline: string; check: string } {
  const command = options.command ?? ['<your agent command>']
  return {
    live: commandLine(['toolstorm', 'explore', '--only', variation.id, ...options.rerunFlags, '--', ...command]),
    proxy: commandLine(['toolstorm', 'proxy', ...proxyFlags(options.rerunFlags), '--rules', path.join(folder, 'rules.json')]),
    offline: commandLine(['toolstorm', 'replay', path.join(folder, 'cassette.jsonl'), '--', ...command]),
    check: commandLine(['toolstorm', 'check', path.join(folder, 'cassette.jsonl')]),
  }
}

/** The counterexample's README.md: what failed, and the commands that reproduce it. */
export function counterexampleReadme(variation: ExploreVariationResult, described: string, commands: ReturnType<typeof reproduceCommands>, hasCassette: boolean): string {
  const onCommits = variation.failed.some((failure) => COMMIT_CHECKS.has(failure.check))
  return [
    `# Counterexample ${variation.id}`,
    '',
    `${described}: **FAIL**`,
    '',
    ...variation.failed.map((failure) => `- ${failure.check}: ${failure.detail}`),
    '',
    '## Reproduce it live',
    '',
    '```sh',
    commands.live,
    '```',
    '',
    `Or run the proxy with its rules (\`rules.json\`, seed included) and your agent against it: \`${commands.proxy}\`.`,
    '',
    ...(hasCassette
      ? [
          '## Reproduce it offline',
          '',
          'The run as recorded (redacted), replayed strictly with no network: the agent gets exactly what it got.',
          '',
          '```sh',
          commands.offline,
          commands.check + '   # the contracts on what the run committed (duplicate effects, budgets)',
          '```',
          '',
          ...(onCommits ? ['The cassette holds the commits the tool servers made in that run: its replay fails on them whatever the agent does now. Check a fix live, with the command above.', ''] : []),
        ]
      : ['The run recorded no exchange: there is no cassette to replay.', '']),
  ].join('\n')
}

/**
 * The run's cassette with the run's own rules and seed in its header: a proxy's recording names the
 * proxy's rules there, and `toolstorm check` rebuilds the run's coverage from the header's rules.
 */
function withRunRules(text: string, rules: ReturnType<typeof rulesFor>, id: string): string {
  const cassette = Cassette.parse(text, `the recording of ${id}`)
  const config = parseConfig(rules, `the rules of ${id}`)
  return Cassette.from({ ...cassette.header, seed: config.seed, routes: config.routes, rules: config.rules }, cassette.exchanges, `the counterexample ${id}`).toString()
}

/** A failure's cassette, written into its counterexample's folder as soon as its run ends (memory stays flat). */
export async function writeCounterexampleCassette(dir: string, variation: Variation, base: RunBase, recorded: string): Promise<void> {
  const folder = path.join(dir, variation.id)
  await mkdir(folder, { recursive: true })
  await writeFileAtomic(path.join(folder, 'cassette.jsonl'), withRunRules(recorded, rulesFor(variation, base), variation.id))
}

/** Write the counterexamples (their cassettes are there already); returns the result with each failure's folder. */
export async function writeCounterexamples(result: ExploreResult, options: CounterexampleOptions): Promise<ExploreResult> {
  const variations: ExploreVariationResult[] = []
  for (const variation of result.variations) {
    const found = options.rules(variation.id)
    if (variation.status !== 'fail' || !found) {
      variations.push(variation)
      continue
    }
    const folder = path.join(options.dir, variation.id)
    await mkdir(folder, { recursive: true })
    const commands = reproduceCommands(variation, folder, options)
    const rules = rulesFor(found, options.base)
    await writeFileAtomic(path.join(folder, 'rules.json'), JSON.stringify(rules, null, 2) + '\n')
    const row = { ...variation, counterexample: folder }
    await writeFileAtomic(path.join(folder, 'variation.json'), JSON.stringify({ ...row, reproduce: commands }, null, 2) + '\n')
    await writeFileAtomic(path.join(folder, 'README.md'), counterexampleReadme(variation, describeVariation(found), commands, options.cassettes.has(variation.id)))
    variations.push(row)
  }
  return { ...result, variations }
}
