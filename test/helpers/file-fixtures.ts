/**
 * What the tests of one file share, as vitest file-scoped fixtures instead of `beforeAll` +
 * `afterAll`: made on the first test that asks for it, closed after the file's last test.
 *
 *   import { test } from '../helpers/file-fixtures.js'
 *   test('records into the folder', async ({ dir, upstream }) => { … })
 */
import { mkdtemp, rm } from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { test as base } from 'vitest'
import { startUpstream } from './upstream.js'

// vitest reads what a fixture depends on from the destructuring of its first parameter: `{}` is none.
/* eslint-disable no-empty-pattern */
export const test = base
  /** A temporary folder for the file, removed with its contents after its last test. */
  .extend('dir', { scope: 'file' }, async ({}, { onCleanup }) => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-file-'))
    onCleanup(() => rm(dir, { recursive: true, force: true }))
    return dir
  })
  /** The fake tool server (test/helpers/upstream.ts), one for the file. */
  .extend('upstream', { scope: 'file' }, async ({}, { onCleanup }) => {
    const upstream = await startUpstream()
    onCleanup(() => upstream.close())
    return upstream
  })
  /** A port a server of this file listens on until its last test: a port in use, for the errors that name it. */
  .extend('taken', { scope: 'file' }, async ({}, { onCleanup }) => {
    const holder = net.createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    onCleanup(() => new Promise<void>((resolve) => holder.close(() => resolve())))
    return (holder.address() as net.AddressInfo).port
  })
/* eslint-enable no-empty-pattern */
