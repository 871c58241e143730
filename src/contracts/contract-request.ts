/**
 * A contract as data: `{"checks": [{"type": "noDuplicateEffects"}, {"type": "atMostCalls", "count": 2}]}`,
 * so that a client in another language (the Python package, through `POST /contract?run=ID`) runs
 * the same checks as `contract(report)` here, with the same names, details and verdict.
 * Each `type` is a `Contract` method's name; `check` is a check the client decided itself.
 */
import { z } from 'zod'
import { ConfigError } from '../errors.js'
import { formatIssues } from '../engine/schema/format-issues.js'
import type { Report } from '../engine/schema/report.js'
import { docsUrl } from '../docs-url.js'
import { TOKEN_KINDS, type TokenKind } from '../model-calls/contracts/at-most-tokens.js'
import { contract, type ContractResult } from './contract.js'

/** Checks one request may carry. */
const MAX_CHECKS = 100

const count = z.int({ error: 'expected a nonnegative integer' }).min(0, { error: 'expected a nonnegative integer' })
const name = z.string().min(1).max(200)

/** One schema per check `type`: a `Contract` method's parameters, and `check` for a client's own verdict. */
const CHECK_SCHEMAS = [
  z.strictObject({ type: z.literal('requireTriggered'), names: z.array(name).max(100).default([]) }),
  z.strictObject({ type: z.literal('noDuplicateEffects') }),
  z.strictObject({ type: z.literal('atMostCalls'), count, route: name.optional() }),
  z.strictObject({ type: z.literal('atMostEffects'), name, count, key: name.optional() }),
  z.strictObject({ type: z.literal('atMostModelCalls'), count }),
  z.strictObject({ type: z.literal('atMostTokens'), count, kind: z.enum(TOKEN_KINDS as [TokenKind, ...TokenKind[]]).default('total') }),
  z.strictObject({ type: z.literal('maxRecoveryTokens'), count }),
  z.strictObject({ type: z.literal('retryAfterRespected') }),
  z.strictObject({ type: z.literal('claimsMatchEffects') }),
  z.strictObject({ type: z.literal('effectsRequireApproval'), effect: name, route: name }),
  z.strictObject({ type: z.literal('check'), name, passed: z.boolean(), detail: z.string().max(2000).default('') }),
] as const

/** The `type`s a request may carry, read from the schemas so the error below cannot fall behind them. */
export const CONTRACT_CHECK_TYPES: readonly string[] = CHECK_SCHEMAS.map((schema) => schema.shape.type.value)

export const contractCheckSchema = z.discriminatedUnion('type', CHECK_SCHEMAS, {
  error: `expected "type" to be one of ${CONTRACT_CHECK_TYPES.map((type) => `"${type}"`).join(', ')}`,
})

export const contractRequestSchema = z.strictObject({ checks: z.array(contractCheckSchema).max(MAX_CHECKS, { error: `expected at most ${MAX_CHECKS} checks` }) })

export type ContractCheckRequest = z.output<typeof contractCheckSchema>

/** Validate a contract request, throwing a `ConfigError` that names the field and what was expected. */
export function parseContractRequest(input: unknown, source: string): ContractCheckRequest[] {
  const result = contractRequestSchema.safeParse(input)
  if (!result.success) {
    const lines = formatIssues(result.error, input)
    throw new ConfigError(`Failed to read the contract from ${source}: ${lines[0]}${lines.length > 1 ? ` (and ${lines.length - 1} more)` : ''}. See ${docsUrl('admin-api.md')}.`, { details: lines.join('\n') })
  }
  return result.data.checks
}

/** Run the checks on `report`, in order, with what failing checks name (`details`). An empty list does not pass, as an empty `contract()` does not. */
export function runContract(report: Report, checks: readonly ContractCheckRequest[]): ContractResult {
  const built = contract(report)
  for (const check of checks) {
    switch (check.type) {
      case 'requireTriggered':
        built.requireTriggered(...check.names)
        break
      case 'noDuplicateEffects':
        built.noDuplicateEffects()
        break
      case 'atMostCalls':
        built.atMostCalls(check.count, check.route === undefined ? {} : { route: check.route })
        break
      case 'atMostEffects':
        built.atMostEffects(check.name, check.count, check.key === undefined ? {} : { key: check.key })
        break
      case 'atMostModelCalls':
        built.atMostModelCalls(check.count)
        break
      case 'atMostTokens':
        built.atMostTokens(check.count, { kind: check.kind })
        break
      case 'maxRecoveryTokens':
        built.maxRecoveryTokens(check.count)
        break
      case 'retryAfterRespected':
        built.retryAfterRespected()
        break
      case 'claimsMatchEffects':
        built.claimsMatchEffects()
        break
      case 'effectsRequireApproval':
        built.effectsRequireApproval({ effect: check.effect, route: check.route })
        break
      case 'check':
        built.check(check.name, check.passed, check.detail)
        break
      default: {
        // A schema added above without its case here fails to compile instead of being skipped.
        const unhandled: never = check
        throw new TypeError(`Unhandled contract check ${JSON.stringify(unhandled)}`)
      }
    }
  }
  return built.toResult()
}
