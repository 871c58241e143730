/**
 * The 100k-exchange load alone (the gate "load 100k exchanges ≤ 2 s" of `npm run bench -- cassette`),
 * for a quick look without the rest of the suite: `node --expose-gc --import tsx bench/load-100k.ts [rounds]`.
 * Prints wall and CPU milliseconds per load and their medians.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { Cassette } from '../src/cassette/format/cassette.js'
import { writeSynthetic } from './cassette.js'

const rounds = Number(process.argv[2] ?? 5)
const dir = await mkdtemp(path.join(tmpdir(), 'toolstorm-load-'))
const file = path.join(dir, 'large.jsonl')
await writeSynthetic(file, 100_000)
const wall: number[] = []
const cpu: number[] = []
for (let round = 0; round < rounds; round++) {
  ;(globalThis as { gc?: () => void }).gc?.()
  const started = performance.now()
  const usage = process.cpuUsage()
  const loaded = await Cassette.load(file)
  const spent = process.cpuUsage(usage)
  wall.push(performance.now() - started)
  cpu.push((spent.user + spent.system) / 1000)
  if (loaded.exchanges.length !== 100_000) throw new Error(`loaded ${loaded.exchanges.length} exchanges`)
}
await rm(dir, { recursive: true, force: true })
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
console.log(`wall ms: ${wall.map((v) => v.toFixed(0)).join(' ')} (median ${median(wall).toFixed(0)})`)
console.log(`cpu ms:  ${cpu.map((v) => v.toFixed(0)).join(' ')} (median ${median(cpu).toFixed(0)})`)
