/**
 * Stdio MCP servers for tests, launched as an agent's MCP config launches them: directly, or
 * through `toolstorm mcp` (the built bin) with the same command after `--`. The clients are the
 * official TypeScript SDK's (`StdioClientTransport`) and raw JSON-RPC lines.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { onTestFinished } from 'vitest'
import { BIN, ROOT } from './cli.js'
import { closingChild } from './teardown.js'

export const FILESYSTEM_SERVER = [path.join(ROOT, 'node_modules/.bin/mcp-server-filesystem')]
export const MEMORY_SERVER = [path.join(ROOT, 'node_modules/.bin/mcp-server-memory')]
/** fixtures/stdio-mcp-server: `create_note` (reports its effect), `count`, `exit_now`, `print_garbage`. */
export const NOTES_SERVER = [process.execPath, path.join(ROOT, 'fixtures/stdio-mcp-server/server.mjs')]

/** `server` through `toolstorm mcp` with `options` (an empty server: `--replay` with none). */
export function wrappedCommand(server: readonly string[], options: readonly string[]): string[] {
  return [process.execPath, BIN, 'mcp', ...options, ...(server.length ? ['--', ...server] : [])]
}

/** `command` run by a shell that writes its exit status to `file`: the status a launcher sees. */
export function statusTo(file: string, command: readonly string[]): string[] {
  return ['/bin/sh', '-c', `"$@"; echo $? > ${JSON.stringify(file)}`, 'sh', ...command]
}

export interface SdkConnection {
  readonly client: Client
  readonly transport: StdioClientTransport
  /** What the client's `onerror` heard (a line it could not parse, …). */
  readonly errors: Error[]
  /** The stderr of the launched process (the wrapper's and its server's). */
  stderr(): string
  /** Close the client (stdin closed, as the SDK closes it) and wait for the process to exit. */
  close(): Promise<void>
}

/** Connect the SDK client to `command` (launched with `env` added to this process's). */
export async function connectSdk(command: readonly string[], env: Record<string, string> = {}, configure?: (client: Client) => void): Promise<SdkConnection> {
  const [file, ...args] = command as [string, ...string[]]
  const transport = new StdioClientTransport({ command: file, args, env: { ...(process.env as Record<string, string>), ...env }, stderr: 'pipe', cwd: ROOT })
  let stderr = ''
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const client = new Client({ name: 'toolstorm-test', version: '1.0.0' }, { capabilities: { roots: { listChanged: true } } })
  configure?.(client)
  const errors: Error[] = []
  client.onerror = (error) => errors.push(error)
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    await client.close()
  }
  onTestFinished(close)
  await client.connect(transport)
  return { client, transport, errors, stderr: () => stderr, close }
}

export interface RawServer {
  readonly child: ChildProcess
  /** Send one message (a line). */
  send(message: unknown): void
  /** The next `count` lines the server wrote (waits for them). */
  lines(count: number): Promise<string[]>
  stderr(): string
  /** Close stdin; resolves with how the process exited. */
  end(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  /** Resolves with how the process exited (stdin left open). */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** `command` spoken to with raw JSON-RPC lines. */
export function rawServer(command: readonly string[], env: Record<string, string> = {}): RawServer {
  const [file, ...args] = command as [string, ...string[]]
  const child = closingChild(spawn(file, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] }))
  let buffer = ''
  const waiting: Array<() => void> = []
  const received: string[] = []
  let stderr = ''
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8')
    let newline: number
    while ((newline = buffer.indexOf('\n')) !== -1) {
      received.push(buffer.slice(0, newline))
      buffer = buffer.slice(newline + 1)
    }
    for (const wake of waiting.splice(0)) wake()
  })
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  return {
    child,
    send: (message) => child.stdin!.write(JSON.stringify(message) + '\n'),
    async lines(count) {
      while (received.length < count) await new Promise<void>((resolve) => waiting.push(resolve))
      return received.splice(0, count)
    },
    stderr: () => stderr,
    async end() {
      child.stdin!.end()
      const [code, signal] = await exited
      return { code, signal }
    },
    async exited() {
      const [code, signal] = await exited
      return { code, signal }
    },
  }
}

/** The JSON a process wrote to `file` once it exists (the wrapper's report, written when it ends). */
export async function readJson<T = unknown>(file: string): Promise<T> {
  return JSON.parse(await readFile(file, 'utf8')) as T
}

/** The text of a tool result's first content item. */
export function textOf(result: unknown): string {
  return ((result as { content: Array<{ text: string }> }).content[0] as { text: string }).text
}

/** A rules file in `folder` (seed 7) holding `rules`. */
export async function rulesFile(folder: string, rules: unknown[], name = 'rules.json'): Promise<string> {
  const file = path.join(folder, name)
  await writeFile(file, JSON.stringify({ seed: 7, rules }))
  return file
}

/** Resolves once the client's connection closed (the wrapper exited). */
export function closed(connection: SdkConnection): Promise<void> {
  return new Promise((resolve) => {
    const before = connection.client.onclose
    connection.client.onclose = () => {
      before?.()
      resolve()
    }
  })
}
