/**
 * Docs that cannot drift (#29): every fenced block of README.md and docs/*.md is run, or checked
 * and marked with why it is not run (markdown-blocks.ts; how to mark a new block: CONTRIBUTING.md).
 *
 * - shell: every `toolstorm` command line is parsed against the CLI (commands, flags, choices,
 *   values); blocks marked `<!-- run -->` run in a scratch folder with the built CLI on PATH;
 * - transcripts (`$ toolstorm …` then its output): the command runs and the output must match;
 * - rules files (JSON/YAML): validated with the real schema, no lint warning, and
 *   `toolstorm rules --strict` on the saved file; error bodies: a real code and type;
 * - Compose/Kubernetes YAML: parsed, and the `toolstorm` command in it parsed against the CLI;
 * - TypeScript: compiled against the package's types; Python: compiled.
 * A changed flag, field, code or message fails here.
 */
import { execFile, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { parseAllDocuments } from 'yaml'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliParser, loadCommands } from '../../src/cli/main.js'
import { ERROR_CODES } from '../../src/errors.js'
import { formatRuleWarning, lintRules } from '../../src/lint/lint-rules.js'
import { MAX_MAX_CALLS } from '../../src/engine/schema/config.js'
import { configSchema } from '../../src/default-faults.js'
import { parseConfig } from '../../src/create-storm.js'
import { BIN, ROOT, runCli } from '../helpers/cli.js'
import { hasPythonModules, PYTHON } from '../helpers/python.js'
import { freePort } from '../helpers/redis-server.js'
import { startUpstream } from '../helpers/upstream.js'
import { blocksOf, docFiles, type DocBlock } from './markdown-blocks.js'
import { shellCommands, toolstormArgvs } from './shell-words.js'
import { compileBlocks } from './typescript-blocks.js'

const run = promisify(execFile)
const SHELL = new Set(['sh', 'bash', 'shell', 'console'])
const TYPESCRIPT = new Set(['ts', 'typescript', 'js', 'javascript'])
const DATA = new Set(['json', 'yaml', 'yml'])
const ERROR_TYPES = new Set(['admin_error', 'proxy_error', 'replay_error', 'cassette_mismatch', 'upstream_unreachable', 'call_budget_exhausted'])

const parsed = docFiles().map(blocksOf)
const blocks = parsed.flatMap((file) => file.blocks)
/** What happened to each block, for the closing count. */
const outcome = new Map<string, 'run' | 'not run' | 'output'>()

let scratch: string
let compiled: Promise<Map<string, string[]>>
beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-docs-'))
  // `toolstorm` (and `npx toolstorm`) as a user runs it: the built CLI.
  const bin = path.join(scratch, '.bin')
  await mkdir(bin, { recursive: true })
  await writeFile(path.join(bin, 'toolstorm'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`)
  await writeFile(path.join(bin, 'npx'), `#!/bin/sh\n[ "$1" = toolstorm ] && shift && exec "${process.execPath}" "${BIN}" "$@"\nexec "${path.join(path.dirname(process.execPath), 'npx')}" "$@"\n`)
  await chmod(path.join(bin, 'toolstorm'), 0o755)
  await chmod(path.join(bin, 'npx'), 0o755)
  compiled = compileBlocks(blocks.filter((block) => TYPESCRIPT.has(block.lang)))
  compiled.catch(() => undefined)
})
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true })
  const count = (kind: string) => [...outcome.values()].filter((value) => value === kind).length
  console.log(`[docs] ${blocks.length} blocks: ${count('run')} run, ${count('not run')} marked not run (checked), ${count('output')} marked output`)
})

/** The CLI's parser with handlers that do nothing: the command line is checked, nothing runs. */
const DRY = (await loadCommands()).map((command) => ({ ...command, handler: () => undefined }))
async function checkCommandLine(argv: string[], where: string): Promise<void> {
  if (argv.includes('--help') || argv.includes('--version')) return
  await expect(cliParser(argv, DRY).exitProcess(false).parseAsync(), `${where}: toolstorm ${argv.join(' ')}`).resolves.toBeDefined()
}

/** Every `command` of a Compose service or a Kubernetes container that runs toolstorm. */
function yamlCommands(value: unknown, found: string[][] = []): string[][] {
  if (Array.isArray(value)) value.forEach((item) => yamlCommands(item, found))
  else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key === 'command' && typeof item === 'string') found.push(...toolstormArgvs(shellCommands(item)))
      else if (key === 'command' && Array.isArray(item)) found.push(...toolstormArgvs([item.map((word) => String(word).replace(/\$\(\w+\)|\$\{\w+\}/g, 'VALUE'))]))
      else yamlCommands(item, found)
    }
  }
  return found
}

/** Lines of a transcript's expected output match the actual output in order; `…`/`...` stand for anything. */
function matchTranscript(expected: string[], actual: string[]): string | null {
  let at = 0
  for (const line of expected.map((text) => text.trimEnd()).filter(Boolean)) {
    if (/^\s*(…|\.\.\.)\s*$/.test(line)) continue
    const pattern = new RegExp(`^${line.split(/…|\.\.\./).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`)
    const found = actual.findIndex((text, i) => i >= at && pattern.test(text.trimEnd()))
    if (found === -1) return `expected the line ${JSON.stringify(line)} (in order) in:\n${actual.join('\n')}`
    at = found + 1
  }
  return null
}

function markerKind(block: DocBlock): 'run' | 'not run' | 'output' | null {
  return block.marker ? (block.marker.kind === 'not-run' ? 'not run' : block.marker.kind) : null
}

describe('docs', () => {
  it('has no malformed markers', () => {
    expect(parsed.flatMap((file) => file.problems)).toEqual([])
  })

  for (const block of blocks) {
    const kind = markerKind(block)
    // Concurrent: blocks share nothing but the scratch folder (each writes files of its own name).
    it.concurrent(`${block.where} [${block.lang || 'text'}]${kind ? ` (${kind})` : ''}`, { timeout: 120_000 }, async () => {
      if (SHELL.has(block.lang)) return shellBlock(block)
      if (block.lang === '' || block.lang === 'text') return textBlock(block)
      if (DATA.has(block.lang)) return dataBlock(block)
      if (TYPESCRIPT.has(block.lang)) return typescriptBlock(block)
      if (block.lang === 'python') return pythonBlock(block)
      throw new Error(`${block.where}: no check for \`\`\`${block.lang} blocks; mark it <!-- output --> or <!-- not run: why -->`)
    })
  }

  it('documents maxCalls as the schema defines it (#29 item 5)', () => {
    const row = /^\| `maxCalls` \| (.*?) \| (.*?) \|$/m.exec(readFileSync(path.join(ROOT, 'docs/rules.md'), 'utf8'))
    expect(row, 'the maxCalls row of docs/rules.md').toBeTruthy()
    const [, defaults, meaning] = row as RegExpExecArray
    expect(configSchema.parse({}).maxCalls).toBeNull()
    expect(defaults).toContain('`null` (no budget)')
    expect(meaning).toContain(`(1–${MAX_MAX_CALLS.toLocaleString('en-US')})`)
  })
})

async function shellBlock(block: DocBlock): Promise<void> {
  const kind = markerKind(block)
  expect(kind === 'run' || kind === 'not run', `${block.where}: a shell block runs (<!-- run -->) or says why not (<!-- not run: why -->)`).toBe(true)
  for (const argv of toolstormArgvs(shellCommands(block.code))) await checkCommandLine(argv, block.where)
  if (kind === 'run' && /^(npx )?toolstorm (proxy|record|replay) /m.test(block.code)) {
    await serverBlock(block)
    return void outcome.set(block.where, 'run')
  }
  if (kind === 'run') {
    const result = await run('bash', ['-euo', 'pipefail', '-c', block.code], { cwd: scratch, env: { ...process.env, PATH: `${path.join(scratch, '.bin')}:${process.env.PATH}`, TOOLSTORM_CA_DIR: path.join(scratch, 'ca'), NO_COLOR: '1' }, timeout: 100_000, maxBuffer: 16 * 1024 * 1024 }).catch((error: { code?: number; stdout?: string; stderr?: string }) => error)
    expect((result as { code?: number }).code ?? 0, `${block.where} exited non-zero:\n${(result as { stderr?: string }).stderr ?? ''}`).toBe(0)
  }
  outcome.set(block.where, kind as 'run' | 'not run')
}

/**
 * A shell block that starts a server (`toolstorm proxy …`) with what it prints as `# ` comments:
 * the docs' ports become free ones (8787, 8788) and a real upstream (4000), `rules.yaml` is
 * docs/rules.md's example, the printed lines must read as shown, and SIGTERM stops it cleanly
 * (writing `--report` when asked).
 */
async function serverBlock(block: DocBlock): Promise<void> {
  const upstream = await startUpstream()
  const dir = path.join(scratch, `${block.file.replace(/\W/g, '_')}_${block.line}`)
  await mkdir(dir, { recursive: true })
  try {
    const [data, admin] = [await freePort(), await freePort()]
    const text = block.code.replaceAll('127.0.0.1:8787', `127.0.0.1:${data}`).replaceAll('127.0.0.1:8788', `127.0.0.1:${admin}`).replaceAll('http://127.0.0.1:4000', upstream.url)
    const lines = text.split('\n')
    const start = lines.findIndex((line) => /^(npx )?toolstorm /.test(line))
    const [argv] = toolstormArgvs(shellCommands(lines[start] as string))
    const expected = lines.slice(start + 1).filter((line) => line.startsWith('# ')).map((line) => line.slice(2))
    await writeFile(path.join(dir, 'rules.yaml'), RULES_EXAMPLE)
    const child = spawn(process.execPath, [BIN, ...(argv as string[]), '--port', String(data), '--admin-port', String(admin)], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk).split('\n').length > expected.length && resolve())
      void exited.then(() => resolve())
    })
    const problem = matchTranscript(expected, stdout.split('\n'))
    child.kill('SIGTERM')
    expect(await exited, `${block.where}: exit code on SIGTERM\n${stderr}`).toBe(0)
    expect(problem, `${block.where}: ${problem}`).toBeNull()
    const report = argv?.[argv.indexOf('--report') + 1]
    if (argv?.includes('--report')) expect(JSON.parse(await readFile(path.join(dir, report as string), 'utf8'))).toMatchObject({ kind: 'toolstorm.report' })
  } finally {
    await upstream.close()
  }
}

/** docs/rules.md's headline example: the `rules.yaml` the docs' commands use (JSON is YAML). */
const RULES_EXAMPLE = (blocks.find((block) => block.file === 'docs/rules.md' && block.lang === 'json')?.code ?? '{}').replace(/^\s*"\$schema".*\n/m, '')

async function textBlock(block: DocBlock): Promise<void> {
  const [first, ...rest] = block.code.split('\n')
  if (first?.startsWith('$ ')) {
    // A transcript: the command runs, and what it prints must read as shown.
    const [argv] = toolstormArgvs(shellCommands(first.slice(2)))
    expect(argv, `${block.where}: a transcript runs a toolstorm command`).toBeDefined()
    const result = await runCli(argv as string[], { cwd: scratch, timeoutMs: 100_000, env: { NO_COLOR: '1' } })
    const problem = matchTranscript(rest, `${result.stdout}${result.stderr}`.split('\n'))
    expect(problem, `${block.where}: ${problem}`).toBeNull()
    outcome.set(block.where, 'run')
    return
  }
  const kind = markerKind(block)
  expect(kind === 'output' || kind === 'not run', `${block.where}: a text block is a transcript ($ toolstorm …), or is marked <!-- output --> / <!-- not run: why -->`).toBe(true)
  outcome.set(block.where, kind as 'output' | 'not run')
}

async function dataBlock(block: DocBlock): Promise<void> {
  const kind = markerKind(block)
  if (kind === 'output') return void outcome.set(block.where, 'output')
  const documents = block.lang === 'json' ? [JSON.parse(block.code) as unknown] : parseAllDocuments(block.code).map((document) => {
    expect(document.errors, `${block.where}: YAML errors`).toEqual([])
    return document.toJS() as unknown
  })
  if (kind === 'not run') {
    // Deployment files: they parse, and the toolstorm command in them is a valid command line.
    for (const argv of documents.flatMap((document) => yamlCommands(document))) await checkCommandLine(argv, block.where)
    return void outcome.set(block.where, 'not run')
  }
  const [document] = documents
  if (document && typeof document === 'object' && 'error' in document) {
    const { error } = document as { error: { type: string; code: string; message: string } }
    expect(ERROR_TYPES.has(error.type), `${block.where}: error type ${error.type}`).toBe(true)
    expect(error.code in ERROR_CODES || error.code === 'ERR_CALL_BUDGET', `${block.where}: error code ${error.code}`).toBe(true)
    expect(typeof error.message).toBe('string')
    return void outcome.set(block.where, 'run')
  }
  // A rules file: the real schema, no warning, and `toolstorm rules --strict` on it as saved.
  const config = parseConfig(document, block.where)
  expect(lintRules(config).map(formatRuleWarning), `${block.where}: rules that can never fire`).toEqual([])
  const file = path.join(scratch, `${block.file.replace(/\W/g, '_')}_${block.line}.${block.lang === 'json' ? 'json' : 'yaml'}`)
  // The $schema path is relative to docs/: point it at the schema from the scratch folder.
  await writeFile(file, block.code.replace('"../schemas/rules.schema.json"', JSON.stringify(path.join(ROOT, 'schemas/rules.schema.json'))))
  const strict = await runCli(['rules', file, '--strict'], { timeoutMs: 100_000 })
  expect(strict.code, `${block.where}: toolstorm rules --strict\n${strict.stderr}`).toBe(0)
  expect(strict.stdout).toMatch(/^Valid rules v1: /)
  outcome.set(block.where, 'run')
}

async function typescriptBlock(block: DocBlock): Promise<void> {
  const errors = (await compiled).get(block.where) ?? []
  expect(errors, `${block.where} does not compile against the package's types`).toEqual([])
  expect((await compiled).get('prelude') ?? []).toEqual([])
  const kind = markerKind(block)
  expect(kind === 'not run', `${block.where}: a TypeScript block compiles, and says why it does not run (<!-- not run: why -->)`).toBe(true)
  outcome.set(block.where, 'not run')
}

async function pythonBlock(block: DocBlock): Promise<void> {
  const python = hasPythonModules() ? PYTHON : 'python3'
  const check = await new Promise<number | null>((resolve) => {
    const child = execFile(python, ['-c', 'import ast, sys; ast.parse(sys.stdin.read())'], (error) => resolve(error ? ((error as { code?: number }).code ?? 1) : 0))
    child.stdin?.end(block.code)
  })
  expect(check, `${block.where}: Python does not parse`).toBe(0)
  const kind = markerKind(block)
  expect(kind === 'not run', `${block.where}: a Python block says why it does not run (<!-- not run: why -->)`).toBe(true)
  outcome.set(block.where, 'not run')
}
