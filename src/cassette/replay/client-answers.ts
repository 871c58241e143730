/**
 * A client's answer to a request a stdio MCP server made during a call (sampling, elicitation,
 * roots), held against the answer recorded with it when a replay sends that request again. The
 * recorded answer to the call was made from the recorded client answer: if the live one differs,
 * serving it would hide that the agent now behaves differently, so the verdict fails.
 *
 * Compared as replay compares request bodies: both redacted, key order aside, normalised as the
 * cassette says, minus `--ignore-body-field` names; the JSON-RPC id and version aside.
 */
import type { JsonValue } from '../../json/canonical-json.js'
import type { Redactor } from '../../redact/redactor.js'
import type { MatchOptions, StoredServerMessage } from '../format/cassette-schema.js'
import { normaliseJson } from '../format/normalisers.js'
import { jsonDiff, type PathDiff } from './miss-diff.js'

/** How `live` differs from the answer recorded to `recorded` (up to five JSON paths), or null when it does not (or none was recorded). */
export function clientAnswerDifference(recorded: StoredServerMessage, live: JsonValue, redactor: Redactor, options: MatchOptions): PathDiff[] | null {
  if (recorded.answer === undefined) return null
  const comparable = (answer: JsonValue) => normaliseJson(withoutEnvelope(answer), options.normalize, options)
  const { paths } = jsonDiff(comparable(recorded.answer.message), comparable(redactor.json(live)), options.ignoreBodyFields)
  return paths.length ? paths : null
}

function withoutEnvelope(answer: JsonValue): JsonValue {
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) return answer
  const { id: _id, jsonrpc: _version, ...rest } = answer
  return rest
}
