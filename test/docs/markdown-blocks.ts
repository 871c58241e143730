/**
 * The fenced code blocks of README.md and docs/*.md, with the marker that may stand on the line
 * right before a block (CONTRIBUTING.md, "Docs that cannot drift"):
 *
 * - `<!-- run -->`: a shell block the docs test runs (in a scratch folder, `toolstorm` on PATH);
 * - `<!-- not run: REASON -->`: not run, and why (a cluster, a real provider, a server on fixed ports);
 * - `<!-- output -->` (or `<!-- output: what -->`): a fragment of output or a shape, not input.
 *
 * Whatever the marker, what can be checked is checked: every `toolstorm` command line is parsed
 * against the CLI, TypeScript compiles, Python compiles, rules and error bodies validate.
 */
import { readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from '../helpers/cli.js'

export type Marker = { readonly kind: 'run' } | { readonly kind: 'not-run'; readonly reason: string } | { readonly kind: 'output'; readonly what: string }

export interface DocBlock {
  /** Path from the repository root (`docs/rules.md`). */
  readonly file: string
  /** Line of the opening fence, from 1. */
  readonly line: number
  /** The info string's first word (`ts`, `sh`, `json`; '' for none). */
  readonly lang: string
  /** The block's text, its fence's indentation removed. */
  readonly code: string
  readonly marker: Marker | null
  /** `docs/rules.md:6`, for messages. */
  readonly where: string
}

/** The Markdown files whose blocks are checked. */
export function docFiles(): string[] {
  const docs = readdirSync(path.join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).sort()
  return ['README.md', ...docs.map((name) => `docs/${name}`)]
}

/** A marker comment, or a reason it is not one (an HTML comment that is no marker is left alone). */
export function parseMarker(line: string): Marker | string | null {
  const comment = /^<!--\s*(.*?)\s*-->$/.exec(line.trim())
  if (!comment) return null
  const text = comment[1] as string
  if (text === 'run') return { kind: 'run' }
  const notRun = /^not run(?::\s*(.*))?$/.exec(text)
  if (notRun) return notRun[1]?.trim() ? { kind: 'not-run', reason: notRun[1].trim() } : 'a "not run" marker needs its reason: <!-- not run: needs a Kubernetes cluster -->'
  const output = /^output(?::\s*(.*))?$/.exec(text)
  if (output) return { kind: 'output', what: output[1]?.trim() ?? '' }
  return null
}

export function blocksOf(file: string): { blocks: DocBlock[]; problems: string[] } {
  const lines = readFileSync(path.join(ROOT, file), 'utf8').split('\n')
  const blocks: DocBlock[] = []
  const problems: string[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i] as string)
    if (!open) continue
    const [, indent, fence, lang] = open as unknown as [string, string, string, string]
    let end = i + 1
    while (end < lines.length && !new RegExp(`^\\s*${fence}\\s*$`).test(lines[end] as string)) end++
    const code = lines
      .slice(i + 1, end)
      .map((text) => (text.startsWith(indent) ? text.slice(indent.length) : text.trimStart()))
      .join('\n')
    const where = `${file}:${i + 1}`
    const marker = i > 0 ? parseMarker(lines[i - 1] as string) : null
    if (typeof marker === 'string') problems.push(`${where}: ${marker}`)
    blocks.push({ file, line: i + 1, lang: lang.toLowerCase(), code, marker: typeof marker === 'string' ? null : marker, where })
    i = end
  }
  return { blocks, problems }
}
