/**
 * Node's own native HTTP/1.1 parser (llhttp compiled into the binary), the one `node:http` runs on.
 * Both ends of the proxy use it: the client-facing server (`wire-server.ts`) and the upstream pool.
 *
 * @note Internal to Node (`_http_common`), not public API; the engines field (>=20.19) does not pin
 * a line. `test/proxy/native-parser-contract.test.ts` checks the contract on each line .ci/run uses
 * (20, 22, 24, 26); `test/proxy/wire-server.test.ts` and `upstream-pool.test.ts` check the behaviour.
 */
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

export interface NativeParser {
  initialize(type: number, resource: object, maxHeaderSize?: number, lenient?: number): void
  /** Bytes consumed, or the parse error (its `code` is an `HPE_*` name). */
  execute(data: Buffer): number | (Error & { code?: string })
  finish(): number | Error | undefined
  close(): void
  [key: number]: unknown
}

interface NativeParserClass {
  new (): NativeParser
  readonly REQUEST: number
  readonly RESPONSE: number
  readonly kOnHeaders: number
  readonly kOnHeadersComplete: number
  readonly kOnBody: number
  readonly kOnMessageComplete: number
}

const common = require('_http_common') as { HTTPParser: NativeParserClass; methods: readonly string[] }

export const HTTPParser = common.HTTPParser
/** Method names by the index llhttp reports. */
export const METHODS = common.methods
/** Most header lines one message may carry (node:http's `maxHeadersCount` default). */
export const MAX_HEADER_PAIRS = 2000

/**
 * Free a parser whose connection ended. Its native half is held by a strong handle until
 * `close()`, and that handle keeps the parser's callbacks alive, with the connection they close
 * over (socket, request, response): without this every closed connection stayed in memory (#31).
 * Deferred to the next turn, as node:http does: a connection may end inside one of the parser's
 * own callbacks, and closing there would free the native parser while llhttp still runs on it.
 */
export function freeParser(parser: NativeParser): void {
  setImmediate(closeParser, parser)
}

function closeParser(parser: NativeParser): void {
  parser.close()
}
