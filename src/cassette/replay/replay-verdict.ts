/**
 * What a replay did, request by request, and its verdict: the rows of expected vs seen, the
 * counts, the first divergence (which fails the replay), the first truncated body served and the
 * first echo that could not be given back. The session (replay-session.ts) decides; this keeps score.
 */
import { CassetteMismatchError, CassetteTruncatedError, CassetteUnusedError } from '../../errors.js'
import type { CassetteExchange } from '../format/cassette-schema.js'
import type { Cassette } from '../format/cassette.js'
import type { MissDiff } from './miss-diff.js'
import type { ReplayOptions } from './replay-options.js'
import { describeExchange, truncation } from './replay-labels.js'
import { formatReplayTable, type ReplayRow } from './replay-table.js'

export interface ReplayVerdict {
  readonly passed: boolean
  readonly code: 'ERR_CASSETTE_MISMATCH' | 'ERR_CASSETTE_EXTRA' | 'ERR_CASSETTE_TRUNCATED' | 'ERR_CASSETTE_UNUSED' | null
  readonly message: string
  readonly expected: number
  readonly served: number
  readonly repeats: number
  readonly passedThrough: number
  /** Requests on live routes (`live`, `replayOnly`): sent to the network, outside the verdict. */
  readonly live: number
  readonly unused: number
  /** Served responses whose body was cut at the body limit when recorded (repeats included). */
  readonly truncated: number
  readonly rows: readonly ReplayRow[]
}

export type ReplayFailureCode = 'ERR_CASSETTE_MISMATCH' | 'ERR_CASSETTE_EXTRA'

export class ReplayTally {
  readonly cassette: Cassette
  readonly #options: Pick<ReplayOptions, 'allowTruncated' | 'allowUnused'>
  /** One row per request; `expected` is filled in from `position` when the verdict is read. */
  readonly #rows: Array<{ request: number; position: number | null; seen: string; result: string; diff?: MissDiff }> = []
  /** Exchanges served once each, repeats, requests passed through, requests on live routes. */
  served = 0
  repeats = 0
  passedThrough = 0
  live = 0
  /** The first served response whose body was cut when recorded, and how many were served. */
  #truncated: { count: number; request: number; position: number; result: string } | null = null
  #failure: { code: ReplayFailureCode; message: string; request: number; reason: string } | null = null
  /** The first served answer that echoes a value the live request sent, but could not be given it (echoed-values.ts), and how many. */
  #unrestored: { count: number; request: number; position: number | null; names: readonly string[] } | null = null

  constructor(cassette: Cassette, options: Pick<ReplayOptions, 'allowTruncated' | 'allowUnused'>) {
    this.cassette = cassette
    this.#options = options
  }

  /** The first divergence, which failed the verdict (null: none yet). */
  get failure(): { readonly code: ReplayFailureCode; readonly request: number; readonly reason: string } | null {
    return this.#failure
  }

  row(request: number, position: number | null, seen: string, result: string, diff?: MissDiff): void {
    this.#rows.push(diff ? { request, position, seen, result, diff } : { request, position, seen, result })
  }

  /** Request `request` was answered by `position` (`repeat`: already used before). */
  serve(request: number, position: number, seenText: string, repeat: boolean): void {
    if (repeat) this.repeats++
    else this.served++
    const cut = truncation(this.cassette.exchanges[position] as CassetteExchange)
    if (cut === null) this.row(request, position, seenText, repeat ? 'ok (repeat)' : 'ok')
    else {
      const result = this.#options.allowTruncated ? `ok (${cut}, allowed)` : cut
      this.row(request, position, seenText, result)
      if (this.#truncated) this.#truncated.count++
      else this.#truncated = { count: 1, request, position, result: cut }
    }
  }

  /** The replay diverged at `request`: the first divergence is the verdict's. */
  fail(code: ReplayFailureCode, request: number, reason: string, message: string): void {
    this.#failure ??= { code, message, request, reason }
  }

  /**
   * The answer served to request `request` echoes values the client sent under `names`, but still
   * carries the recorded ones (the live value is ambiguous or was not read): the client may drop
   * it, so the verdict fails.
   */
  noteUnrestoredEchoes(request: number, names: readonly string[]): void {
    const row = this.#rows.findLast((candidate) => candidate.request === request)
    if (row) row.result = `echo not restored: ${names.join(', ')} (the client got the recorded value)`
    if (this.#unrestored) this.#unrestored.count++
    else this.#unrestored = { count: 1, request, position: row?.position ?? null, names }
  }

  /** The answer served to request `request` was not sent: `result` says why in its row; the first divergence is the verdict's. */
  failServed(request: number, result: string, message: string): void {
    const row = this.#rows.findLast((candidate) => candidate.request === request)
    if (row) row.result = result
    this.fail('ERR_CASSETTE_MISMATCH', request, result, message)
  }

  /**
   * The client never answered a server request replayed to request `request`, though it had when
   * recorded (the call was cancelled, the client left): as an unused exchange, a failure unless
   * `allowUnused`.
   */
  noteUnanswered(request: number, result: string, message: string): void {
    if (this.#options.allowUnused) return
    this.failServed(request, result, message)
  }

  /** The verdict so far, with the positions never requested (`unused`): failures unless `allowUnused`. */
  verdict(unused: readonly number[]): ReplayVerdict {
    const unusedRows: ReplayRow[] = unused.map((position) => ({ request: null, position: position + 1, expected: describeExchange(this.cassette.exchanges[position] as CassetteExchange), seen: null, result: 'unused' }))
    const rows: ReplayRow[] = this.#rows.map(({ request, position, seen, result, diff }) => ({
      request,
      position: position === null ? null : position + 1,
      expected: position === null ? null : describeExchange(this.cassette.exchanges[position] as CassetteExchange),
      seen,
      result,
      ...(diff ? { diff } : {}),
    }))
    rows.push(...unusedRows)
    const truncated = this.#truncated
    const base = {
      expected: this.cassette.exchanges.length,
      served: this.served,
      repeats: this.repeats,
      passedThrough: this.passedThrough,
      live: this.live,
      unused: unusedRows.length,
      truncated: truncated?.count ?? 0,
      rows,
    }
    if (this.#failure) return { ...base, passed: false, code: this.#failure.code, message: this.#failure.message }
    const unrestored = this.#unrestored
    if (unrestored) {
      const at = unrestored.position === null ? '' : `, exchange ${unrestored.position + 1} (${describeExchange(this.cassette.exchanges[unrestored.position] as CassetteExchange)})`
      return {
        ...base,
        passed: false,
        code: 'ERR_CASSETTE_MISMATCH',
        message: `Failed to replay ${this.cassette.source} faithfully: ${unrestored.count} served response(s) echo a value the client sent, but replay could not give it back (first: request ${unrestored.request}${at}: ${unrestored.names.join(', ')}), so the client got the recorded value and may drop the answer (an MCP client drops progress for a token that is not its own). The live request held several values under that name, or its body was past the body limit.`,
      }
    }
    if (truncated && !this.#options.allowTruncated) {
      const exchange = this.cassette.exchanges[truncated.position] as CassetteExchange
      return {
        ...base,
        passed: false,
        code: 'ERR_CASSETTE_TRUNCATED',
        message: `Failed to replay ${this.cassette.source} faithfully: ${truncated.count} served response(s) had a body cut at the body limit (${this.cassette.header.bodyLimit} bytes) when recorded, so the client got the stored prefix and then a broken connection (first: request ${truncated.request}, exchange ${truncated.position + 1}, ${describeExchange(exchange)}: ${truncated.result}). Record again with a larger --body-limit, or pass --allow-truncated.`,
      }
    }
    if (unusedRows.length && !this.#options.allowUnused) {
      const first = unusedRows[0] as ReplayRow
      return {
        ...base,
        passed: false,
        code: 'ERR_CASSETTE_UNUSED',
        message: `Failed to finish the replay of ${this.cassette.source}: ${unusedRows.length} recorded exchange(s) were never requested (first: exchange ${first.position}, ${first.expected}). Re-record the cassette, or pass --allow-unused.`,
      }
    }
    return { ...base, passed: true, code: null, message: `Replayed ${this.served} of ${this.cassette.exchanges.length} exchange(s) from ${this.cassette.source}${this.repeats ? `, ${this.repeats} repeat(s)` : ''}${this.passedThrough ? `, ${this.passedThrough} passed through` : ''}${this.live ? `, ${this.live} live` : ''}.` }
  }

  /** Throw the verdict's typed error (with the table in `details`) unless it passed. */
  assertDone(unused: readonly number[]): void {
    const verdict = this.verdict(unused)
    if (verdict.passed) return
    const details = formatReplayTable(verdict.rows)
    if (verdict.code === 'ERR_CASSETTE_UNUSED') throw new CassetteUnusedError(verdict.message, { details })
    if (verdict.code === 'ERR_CASSETTE_TRUNCATED') throw new CassetteTruncatedError(verdict.message, { details })
    throw new CassetteMismatchError(verdict.code as 'ERR_CASSETTE_MISMATCH' | 'ERR_CASSETTE_EXTRA', verdict.message, { details })
  }
}
