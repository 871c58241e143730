/** Details of one call in a native dialog (Escape closes it, focus returns to the row). */
import { useEffect, useRef } from 'preact/hooks'
import type { CallRecord, EffectRecord } from '../../dist/engine/schema/report.js'
import { attemptLine, milliseconds, resultLine } from './call-view.js'

export function CallDialog(props: { call: CallRecord | null; effects: readonly EffectRecord[]; onClose(): void }) {
  const dialog = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const element = dialog.current
    if (!element) return
    if (props.call && !element.open) element.showModal()
    if (!props.call && element.open) element.close()
  }, [props.call])
  const call = props.call
  return (
    <dialog ref={dialog} class="call-dialog" aria-labelledby="call-dialog-title" onClose={props.onClose}>
      {call ? (
        <div>
          <h2 id="call-dialog-title">
            {call.route} / attempt {call.ordinal}
          </h2>
          <p>{attemptLine(call)}</p>
          <dl class="facts">
            <dt>Simulated start</dt>
            <dd>{milliseconds(call.started)}</dd>
            <dt>Duration</dt>
            <dd>{milliseconds(call.elapsed)}</dd>
            <dt>Status</dt>
            <dd>{call.status ?? call.outcome}</dd>
            <dt>Upstream</dt>
            <dd>{call.executed ? `reached${call.upstreamStatus ? ` (answered ${call.upstreamStatus})` : ''}` : 'not reached'}</dd>
            <dt>Fault</dt>
            <dd>{call.fault ? `${call.fault} (${call.kind}, ${call.phase})${call.injected ? '' : ', selected but not injected'}` : 'none'}</dd>
            <dt>Result</dt>
            <dd>{resultLine(call, props.effects)}</dd>
            <dt>Request</dt>
            <dd class="mono">
              {call.method} {call.url}
            </dd>
          </dl>
          <h3>Committed side effects</h3>
          {props.effects.length ? (
            <ul>
              {props.effects.map((effect) => (
                <li key={`${effect.name}:${effect.at}`}>
                  {effect.name} · {effect.key} at {milliseconds(effect.at)}
                </li>
              ))}
            </ul>
          ) : (
            <p class="muted">None</p>
          )}
          <button type="button" class="primary" onClick={() => dialog.current?.close()}>
            Close
          </button>
        </div>
      ) : null}
    </dialog>
  )
}
