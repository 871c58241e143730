/**
 * Read a file a user handed us (rules, report, cassette) with a size bound, as UTF-8, and parse
 * it strictly. Every failure is a `ToolstormError` that names the file and what was expected.
 */
import { promises as fs } from 'node:fs'
import { createRequire } from 'node:module'
import type * as Yaml from 'yaml'
import { ToolstormError } from '../errors.js'
import type { JsonValue } from '../json/canonical-json.js'
import { parseStrictJson, StrictJsonError } from '../json/strict-json.js'

/** Default bound for files we read whole: 64 MiB. */
export const DEFAULT_MAX_INPUT_BYTES = 64 * 1024 * 1024

export interface ReadInputOptions {
  maxBytes?: number
  /** Accept YAML (by extension .yaml/.yml, or when the text is not JSON). */
  yaml?: boolean
  /** Force the format instead of guessing from the file name. */
  format?: 'json' | 'yaml'
  maxDepth?: number
  /** What the file is, for messages: `the rules file` gives "Failed to read the rules file nope.yaml: no such file." */
  what?: string
}

/** `the rules file nope.yaml`, or the file alone. */
function named(file: string, options: ReadInputOptions): string {
  return options.what ? `${options.what} ${file}` : file
}

/** Read raw UTF-8 text with a size bound. */
export async function readInputText(file: string, options: ReadInputOptions = {}): Promise<string> {
  const name = named(file, options)
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_INPUT_BYTES
  let handle: fs.FileHandle
  try {
    handle = await fs.open(file, 'r')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : String(code ?? error)
    throw new ToolstormError('ERR_FILE_UNREADABLE', `Failed to read ${name}: ${reason}.`, { cause: error })
  }
  try {
    const stat = await handle.stat()
    if (stat.isDirectory()) throw new ToolstormError('ERR_FILE_UNREADABLE', `Failed to read ${name}: it is a directory.`)
    if (stat.size > maxBytes) throw new ToolstormError('ERR_INPUT_TOO_LARGE', `Failed to read ${name}: it is ${stat.size} bytes, over the limit of ${maxBytes} bytes.`)
    const buffer = Buffer.alloc(Math.min(stat.size, maxBytes) + 1)
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
    if (bytesRead > maxBytes) throw new ToolstormError('ERR_INPUT_TOO_LARGE', `Failed to read ${name}: it exceeds the limit of ${maxBytes} bytes.`)
    try {
      return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(buffer.subarray(0, bytesRead))
    } catch {
      throw new ToolstormError('ERR_JSON_INVALID', `Failed to read ${name}: it is not valid UTF-8.`)
    }
  } catch (error) {
    if (error instanceof ToolstormError) throw error
    const code = (error as NodeJS.ErrnoException).code
    throw new ToolstormError('ERR_FILE_UNREADABLE', `Failed to read ${name}: ${code === 'EISDIR' ? 'it is a directory' : String(code ?? error)}.`, { cause: error })
  } finally {
    await handle.close()
  }
}

/** Read and parse a JSON (or, when allowed, YAML) document. */
export async function readInputDocument(file: string, options: ReadInputOptions = {}): Promise<JsonValue> {
  const text = await readInputText(file, options)
  return parseDocument(text, file, options)
}

/**
 * The YAML parser, loaded with the first YAML document (70-120 ms of every command's start on a
 * loaded machine otherwise, for rules most often written in JSON). Required, not imported: parsing
 * stays synchronous for the admin API's bodies.
 */
let yaml: typeof Yaml | undefined
function yamlParser(): typeof Yaml {
  return (yaml ??= createRequire(import.meta.url)('yaml') as typeof Yaml)
}

/** Parse text already read; `file` names it in errors. */
export function parseDocument(text: string, file: string, options: ReadInputOptions = {}): JsonValue {
  const isYaml = options.format === 'yaml' || (options.format === undefined && options.yaml === true && /\.ya?ml$/i.test(file))
  if (isYaml) {
    const { parse, YAMLParseError } = yamlParser()
    try {
      return parse(text, { uniqueKeys: true, maxAliasCount: 100, prettyErrors: true }) as JsonValue
    } catch (error) {
      const detail = error instanceof YAMLParseError ? `line ${error.linePos?.[0]?.line ?? '?'}, column ${error.linePos?.[0]?.col ?? '?'}: ${error.message.split('\n')[0]}` : String(error)
      throw new ToolstormError('ERR_JSON_INVALID', `Failed to parse ${named(file, options)} as YAML: ${detail}.`, { cause: error })
    }
  }
  try {
    return parseStrictJson(text, { maxDepth: options.maxDepth ?? 64 })
  } catch (error) {
    if (error instanceof StrictJsonError) {
      throw new ToolstormError('ERR_JSON_INVALID', `Failed to parse ${named(file, options)} as JSON: line ${error.line}, column ${error.column} (at ${error.path}): ${error.message}.`, { cause: error })
    }
    throw error
  }
}
