/** Short texts for a call record. */
import type { CallRecord } from '../../src/engine/schema/report.js'

export function latency(call: CallRecord): string {
  return call.elapsed === null ? '…' : `${Math.round(call.elapsed * 1000)} ms`
}

export function statusText(call: CallRecord): string {
  if (call.outcome === 'running') return 'running'
  if (call.status !== null) return String(call.status)
  return call.outcome
}

export function faultText(call: CallRecord): string {
  if (!call.fault) return ''
  return `${call.fault} · ${call.kind}${call.injected ? '' : ' (selected)'}`
}

export function modelText(call: CallRecord): string {
  const model = call.model
  if (!model) return ''
  const tokens = [model.inputTokens, model.outputTokens].some((n) => n !== null) ? ` · ${model.inputTokens ?? '?'}→${model.outputTokens ?? '?'} tok` : ''
  return `${model.model ?? model.provider}${tokens}`
}
