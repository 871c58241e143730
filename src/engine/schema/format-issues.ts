/**
 * Turn zod issues into lines that name the field and what was expected:
 * `$.rules[1].kind: expected "kind" to be one of "timeout", …`. No docs link in a line: the message
 * they go into names the page once (a rules file's, a cassette's, a report's).
 */
import type { z } from 'zod'
import { formatJsonPath } from '../../json/strict-json.js'

export function formatIssues(error: z.ZodError, input?: unknown, limit = 10): string[] {
  const lines: string[] = []
  for (const issue of error.issues.slice(0, limit)) lines.push(`${formatJsonPath(issue.path)}: ${describeIssue(issue, input)}`)
  if (error.issues.length > limit) lines.push(`… and ${error.issues.length - limit} more`)
  return lines
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')} (check the spelling)`
  if (issue.code === 'invalid_type' && input !== undefined && isMissing(input, issue.path)) return `missing; ${lowerFirst(issue.message.replace(/^Invalid input: /, ''))}`
  return lowerFirst(issue.message.replace(/^Invalid input: /, ''))
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1)
}

/** Whether the value at `path` is absent from `input` (its parent exists but lacks the key). */
function isMissing(input: unknown, path: readonly PropertyKey[]): boolean {
  let current: unknown = input
  for (let i = 0; i < path.length; i++) {
    if (current === null || typeof current !== 'object') return false
    const key = path[i] as PropertyKey
    if (!Object.prototype.hasOwnProperty.call(current, key)) return i === path.length - 1
    current = (current as Record<PropertyKey, unknown>)[key]
  }
  return false
}
