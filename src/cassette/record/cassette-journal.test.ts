import { mkdtemp, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { StateError } from '../../errors.js'
import { JournalLineStore, journalPathFor } from './cassette-journal.js'

let dir: string

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-journal-unit-'))
})

afterAll(async () => {
  await rm(dir, { recursive: true, force: true })
})

describe('JournalLineStore', () => {
  it('writes the header and every appended line to the target', async () => {
    const store = await JournalLineStore.create(journalPathFor(path.join(dir, 'a.cassette.jsonl')))
    await store.append('{"n":1}')
    await store.append('{"n":2}')
    const target = path.join(dir, 'a.cassette.jsonl')
    await store.writeTo(target, '{"header":true}')
    expect(await readFile(target, 'utf8')).toBe('{"header":true}\n{"n":1}\n{"n":2}\n')
    await store.dispose()
  })

  it('refuses an append after it was disposed with ERR_STATE, naming the journal', async () => {
    const file = journalPathFor(path.join(dir, 'b.cassette.jsonl'))
    const store = await JournalLineStore.create(file)
    await store.dispose()
    const append = store.append('{"n":1}')
    await expect(append).rejects.toBeInstanceOf(StateError)
    await expect(append).rejects.toMatchObject({
      code: 'ERR_STATE',
      message: `Failed to append to the recording journal ${file}: it is already closed. Record exchanges only before the recorder is closed.`,
    })
  })
})
