/**
 * The config as the admin API and the dashboard show it: rule payloads redacted as in reports, and
 * literal secrets replaced by `[REDACTED]` (their count stays visible).
 */
import { redactRule } from '../../engine/call-decider.js'
import type { StormConfig } from '../../engine/schema/config.js'
import type { Storm } from '../../engine/storm.js'
import { REDACTED } from '../../redact/index.js'

export function shownConfig(storm: Storm): StormConfig {
  const config = storm.config
  return structuredClone({
    ...config,
    rules: config.rules.map((rule) => redactRule(rule, storm.redactor)),
    redact: { keys: [...config.redact.keys], secrets: config.redact.secrets.map(() => REDACTED) },
  })
}
