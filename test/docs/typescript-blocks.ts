/**
 * Compile the TypeScript blocks of the docs against the package's own types (its `exports`, as a
 * project that installed toolstorm resolves them), in one `tsc` run. Each block is a module;
 * the names a fragment uses without declaring them (`storm`, `agent`, `server`) are declared in
 * `prelude.d.ts`, so a fragment compiles as the reader would complete it.
 */
import { execFile } from 'node:child_process'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { ROOT } from '../helpers/cli.js'
import type { DocBlock } from './markdown-blocks.js'

const OUT = path.join(ROOT, 'test/docs/.generated/ts')

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    lib: ['es2023', 'esnext.disposable', 'dom'],
    types: ['node'],
    noEmit: true,
    skipLibCheck: true,
  },
  include: ['*.ts', '../../prelude.d.ts'],
}

/** The file name a block compiles as. */
export function moduleName(block: DocBlock): string {
  return `${block.file.replace(/[/.]/g, '_')}_${block.line}.ts`
}

/** Compile every block; the errors of each, by `block.where` (none: it compiled). */
export async function compileBlocks(blocks: readonly DocBlock[]): Promise<Map<string, string[]>> {
  await rm(OUT, { recursive: true, force: true })
  await mkdir(OUT, { recursive: true })
  await writeFile(path.join(OUT, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2))
  const byFile = new Map<string, DocBlock>()
  for (const block of blocks) {
    const name = moduleName(block)
    byFile.set(name, block)
    // A block without import or export is still a module (its names stay its own).
    const code = /^\s*(import|export)\s/m.test(block.code) ? block.code : `${block.code}\nexport {}`
    await writeFile(path.join(OUT, name), `${code}\n`)
  }
  const errors = new Map<string, string[]>(blocks.map((block) => [block.where, []]))
  const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc')
  const output = await promisify(execFile)(process.execPath, [tsc, '-p', path.join(OUT, 'tsconfig.json'), '--pretty', 'false'], { cwd: OUT, maxBuffer: 16 * 1024 * 1024 }).then(
    (done) => done.stdout,
    (failed: { stdout?: string }) => failed.stdout ?? String(failed),
  )
  for (const line of output.split('\n')) {
    const match = /^(?:.*[/\\])?([^/\\(]+\.ts)\((\d+),\d+\): (error .*)$/.exec(line)
    if (!match) continue
    const block = byFile.get(match[1] as string)
    const key = block ? block.where : 'prelude'
    const list = errors.get(key) ?? []
    list.push(block ? `line ${block.line + Number(match[2])}: ${match[3]}` : line)
    errors.set(key, list)
  }
  return errors
}
