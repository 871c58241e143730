/** Everything the report holds about one exchange (already redacted by the proxy). */
import type { CallRecord, EffectRecord } from '../../src/engine/schema/report.js'
import type { ReportClaim } from '../../src/engine/schema/claim-schema.js'
import { latency, statusText } from './format.js'

export function ExchangeDetail(props: { call: CallRecord | undefined; effects: readonly EffectRecord[]; claims: readonly ReportClaim[] }) {
  const { call } = props
  if (!call) return <p class="muted">Select an exchange (click it, or use the arrow keys in the list) to see its details.</p>
  const model = call.model
  const mcp = call.mcp
  return (
    <div class="exchange-detail">
      <h3>
        #{call.id} {call.route} <span class="mono muted">#{call.ordinal}</span>
      </h3>
      <dl class="facts">
        <dt>Request</dt>
        <dd class="mono">
          {call.method} {call.url}
        </dd>
        <dt>Key</dt>
        <dd class="mono">{call.key}</dd>
        <dt>Started</dt>
        <dd class="mono">+{call.started.toFixed(3)}s</dd>
        <dt>Latency</dt>
        <dd class="mono">{latency(call)}</dd>
        <dt>Outcome</dt>
        <dd>
          {call.outcome} · status {statusText(call)}
          {call.error ? ` · ${call.error}` : ''}
        </dd>
        <dt>Upstream</dt>
        <dd>{call.executed ? `reached${call.upstreamStatus !== null ? `, answered ${call.upstreamStatus}` : ''}` : 'not reached'}</dd>
        <dt>Fault</dt>
        <dd>{call.fault ? `${call.fault} (${call.kind}, ${call.phase}) ${call.injected ? 'injected' : 'selected, not injected'}` : 'none'}</dd>
        {call.retryAfter !== null ? (
          <>
            <dt>Retry-After</dt>
            <dd class="mono">{call.retryAfter}s</dd>
          </>
        ) : null}
        {call.parent !== null ? (
          <>
            <dt>Parent</dt>
            <dd class="mono">#{call.parent}</dd>
          </>
        ) : null}
        {model ? (
          <>
            <dt>Model</dt>
            <dd>
              {model.model ?? 'unknown'} <span class="muted">({model.provider} {model.api}{model.streamed ? ', streamed' : ''})</span>
            </dd>
            <dt>Tokens</dt>
            <dd class="mono">
              in {model.inputTokens ?? '?'} · out {model.outputTokens ?? '?'}
            </dd>
          </>
        ) : null}
        {mcp ? (
          <>
            <dt>MCP</dt>
            <dd class="mcp">
              <span class="mono">{mcp.method}</span>
              {mcp.tool !== null ? <span class="mono"> {mcp.tool}</span> : null}
              <span class="muted"> · id {mcp.id === null ? 'none (notification)' : JSON.stringify(mcp.id)}</span>
              {mcp.session !== null ? <span class="muted"> · session {mcp.session}</span> : null}
              <div>answer: {mcpOutcome(mcp.outcome, mcp.errorCode)}</div>
              {mcp.arguments !== null ? <div class="mono">arguments {JSON.stringify(mcp.arguments)}</div> : null}
            </dd>
          </>
        ) : null}
        {call.cut ? (
          <>
            <dt>Stream cut</dt>
            <dd class="mono">
              after {call.cut.events ?? '?'} events, {call.cut.bytes} bytes
            </dd>
          </>
        ) : null}
        <dt>Effects</dt>
        <dd>
          {props.effects.length
            ? props.effects.map((effect) => (
                <div key={`${effect.identity}:${effect.at}`} class="mono">
                  {effect.name} · {effect.key} at +{effect.at.toFixed(3)}s (identity {effect.identity}){effect.redacted ? ' · redacted' : ''}
                </div>
              ))
            : 'none reported'}
        </dd>
        {props.claims.length ? (
          <>
            <dt>Claims</dt>
            <dd>
              {props.claims.map((claim) => (
                <div key={claim.id} class="mono" data-claim={claim.id}>
                  #{claim.id} {claim.tool} {claim.status}: {claim.verdict.replace('_', ' ')} <span class="muted">({claim.join} join)</span>
                </div>
              ))}
            </dd>
          </>
        ) : null}
      </dl>
    </div>
  )
}

function mcpOutcome(outcome: NonNullable<CallRecord['mcp']>['outcome'], errorCode: number | null): string {
  if (outcome === 'result') return 'result'
  if (outcome === 'isError') return 'result with isError (the tool failed)'
  if (outcome === 'error') return `JSON-RPC error ${errorCode ?? '?'}`
  return 'none (no JSON-RPC answer reached the client)'
}
