/** Everything the report holds about one exchange (already redacted by the proxy). */
import type { CallRecord, EffectRecord } from '../../src/engine/schema/report.js'
import { latency, statusText } from './format.js'

export function ExchangeDetail(props: { call: CallRecord | undefined; effects: readonly EffectRecord[] }) {
  const { call } = props
  if (!call) return <p class="muted">Select an exchange (click it, or use the arrow keys in the list) to see its details.</p>
  const model = call.model
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
      </dl>
    </div>
  )
}
