/**
 * The cassette body limit the docs state is the one the code applies (#36 item 13: docs/proxy.md
 * said 1 MiB while the recorder keeps 16 MiB per body). Every "body limit … (N MiB by default)" or
 * "(default N MiB per body)" in the README and docs/ is checked against DEFAULT_BODY_LIMIT.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { expect, it } from 'vitest'
import { DEFAULT_BODY_LIMIT } from '../../src/cassette/format/cassette-schema.js'
import { ROOT } from '../helpers/cli.js'

const FILES = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)]
const STATED = /(?:--body-limit|`bodyLimit`|body limit)[^()]{0,60}\((?:default )?(\d+) MiB(?: by default| per body)/g

it('states the default body limit of cassettes as the code sets it, wherever it is stated', () => {
  const stated = FILES.flatMap((file) => [...readFileSync(path.join(ROOT, file), 'utf8').replace(/\s+/g, ' ').matchAll(STATED)].map((match) => [file, Number(match[1]) * 1024 * 1024]))
  expect(stated.length).toBeGreaterThanOrEqual(3)
  expect(stated.filter(([, bytes]) => bytes !== DEFAULT_BODY_LIMIT)).toEqual([])
})
