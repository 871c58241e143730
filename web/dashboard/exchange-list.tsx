/**
 * Every exchange of the run, virtualised: only the rows in view (plus a few) are in the DOM, so
 * 10,000 or 100,000 exchanges scroll like ten. A listbox: arrows, Page Up/Down, Home/End move
 * the selection; the details panel follows it. New rows keep the view at the bottom while
 * "Follow" is on; scrolling up turns it off.
 */
import { useLayoutEffect, useRef, useState } from 'preact/hooks'
import type { CallRecord, EffectRecord } from '../../src/engine/schema/report.js'
import type { ClaimVerdict } from '../../src/engine/schema/claim-schema.js'
import { faultText, latency, modelText, statusText } from './format.js'
import { isError } from './run-store.js'

/** Row height in pixels; the stylesheet's `--row-height` must match. */
export const ROW_HEIGHT = 32
const OVERSCAN = 8
/** More than the rows ever rendered at once (a viewport of at most 720 px, plus overscan). */
const SLOTS = 128

export interface ExchangeListProps {
  /** Number of rows. */
  readonly count: number
  /** The call id of row `index`. */
  idAt(index: number): number
  call(id: number): CallRecord | undefined
  effects(id: number): readonly EffectRecord[] | undefined
  /** The verdict of the claim the agent made about this call, if any (the worst, when several). */
  verdict(id: number): ClaimVerdict | undefined
  readonly selected: number | null
  onSelect(id: number): void
  readonly follow: boolean
  onFollowChange(follow: boolean): void
}

export function ExchangeList(props: ExchangeListProps) {
  const viewport = useRef<HTMLDivElement>(null)
  const [scrollTop, setScrollTop] = useState(0)
  const [height, setHeight] = useState(480)
  const frame = useRef<number | null>(null)
  const programmatic = useRef(false)
  const total = props.count * ROW_HEIGHT

  useLayoutEffect(() => {
    const element = viewport.current
    if (!element) return
    const observer = new ResizeObserver(() => setHeight(element.clientHeight))
    observer.observe(element)
    setHeight(element.clientHeight)
    return () => observer.disconnect()
  }, [])

  // Follow the newest exchange. Only writes to the DOM here: reading a layout value right after
  // a render would force a synchronous layout on every update.
  useLayoutEffect(() => {
    const element = viewport.current
    if (!element || !props.follow) return
    const bottom = Math.max(0, total - height)
    if (Math.abs(scrollTop - bottom) < 1) return
    programmatic.current = true
    element.scrollTop = bottom
    setScrollTop(bottom)
  }, [props.count, props.follow, height])

  const onScroll = () => {
    const element = viewport.current
    if (!element) return
    if (programmatic.current) programmatic.current = false
    else if (props.follow && element.scrollTop + element.clientHeight < element.scrollHeight - ROW_HEIGHT) props.onFollowChange(false)
    frame.current ??= requestAnimationFrame(() => {
      frame.current = null
      setScrollTop(element.scrollTop)
    })
  }

  const selectedIndex = props.selected === null ? -1 : indexOf(props, props.selected)

  const moveTo = (index: number) => {
    if (props.count === 0) return
    const clamped = Math.max(0, Math.min(props.count - 1, index))
    props.onSelect(props.idAt(clamped))
    if (props.follow && clamped < props.count - 1) props.onFollowChange(false)
    const element = viewport.current
    if (!element) return
    const top = clamped * ROW_HEIGHT
    if (top < element.scrollTop) element.scrollTop = top
    else if (top + ROW_HEIGHT > element.scrollTop + element.clientHeight) element.scrollTop = top + ROW_HEIGHT - element.clientHeight
  }

  const onKeyDown = (event: KeyboardEvent) => {
    const page = Math.max(1, Math.floor(height / ROW_HEIGHT) - 1)
    const current = selectedIndex === -1 ? -1 : selectedIndex
    const next: Record<string, number> = { ArrowDown: current + 1, ArrowUp: current - 1, PageDown: current + page, PageUp: current - page, Home: 0, End: props.count - 1 }
    const target = next[event.key]
    if (target === undefined) return
    event.preventDefault()
    moveTo(target)
  }

  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN)
  const last = Math.min(props.count, Math.ceil((scrollTop + height) / ROW_HEIGHT) + OVERSCAN)
  const rows = []
  for (let index = first; index < last; index++) {
    const id = props.idAt(index)
    const call = props.call(id)
    const effects = props.effects(id)
    const selected = id === props.selected
    rows.push(
      // Keyed by slot, not by id: scrolling and following reuse the same row elements.
      <div
        key={index % SLOTS}
        id={`exchange-${id}`}
        role="option"
        aria-selected={selected}
        class={`exchange-row${selected ? ' selected' : ''}${call && isError(call) ? ' error' : ''}${call?.injected ? ' faulted' : ''}`}
        style={{ transform: `translateY(${index * ROW_HEIGHT}px)` }}
        onClick={() => props.onSelect(id)}
        data-id={id}
      >
        {call ? <RowCells call={call} effects={effects?.length ?? 0} verdict={props.verdict(id)} /> : <span class="cell muted">#{id} …</span>}
      </div>,
    )
  }

  return (
    <div
      ref={viewport}
      class="exchange-viewport"
      role="listbox"
      tabIndex={0}
      aria-label={`Exchanges (${props.count})`}
      aria-activedescendant={props.selected !== null && selectedIndex >= first && selectedIndex < last ? `exchange-${props.selected}` : undefined}
      onScroll={onScroll}
      onKeyDown={onKeyDown}
    >
      <div class="exchange-spacer" style={{ height: `${total}px` }}>
        {rows}
      </div>
    </div>
  )
}

function indexOf(props: ExchangeListProps, id: number): number {
  // Rows are in id order: binary search.
  let low = 0
  let high = props.count - 1
  while (low <= high) {
    const mid = (low + high) >> 1
    const value = props.idAt(mid)
    if (value === id) return mid
    if (value < id) low = mid + 1
    else high = mid - 1
  }
  return -1
}

/** A claim verdict's badge: contradicted ones fail, a confirmed one passes, an unverified one is neutral. */
const VERDICT_BADGE: Record<ClaimVerdict, { text: string; tone: string }> = {
  confirmed: { text: 'confirmed', tone: 'pass' },
  silent_commit: { text: 'silent commit', tone: 'fail' },
  phantom_success: { text: 'phantom success', tone: 'fail' },
  unverified: { text: 'unverified', tone: '' },
}

function RowCells(props: { call: CallRecord; effects: number; verdict: ClaimVerdict | undefined }) {
  const { call, verdict } = props
  return (
    <>
      <span class="cell id mono">{call.id}</span>
      <span class="cell run-time mono">+{call.started.toFixed(2)}s</span>
      <span class="cell route" title={call.url}>
        {verdict ? (
          <span class={`badge verdict ${VERDICT_BADGE[verdict].tone}`} data-verdict={verdict} title={`The agent's claim about this call: ${VERDICT_BADGE[verdict].text}`}>
            {VERDICT_BADGE[verdict].text}
          </span>
        ) : null}
        {call.route}
      </span>
      <span class="cell ordinal mono">#{call.ordinal}</span>
      <span class="cell key mono" title={call.key}>
        {call.key}
      </span>
      <span class="cell fault" title={faultText(call)}>{call.fault ? <span class={`badge ${call.injected ? 'warn' : ''}`}>{faultText(call)}</span> : null}</span>
      <span class="cell phase muted">{call.phase ?? ''}</span>
      <span class={`cell status mono${isError(call) ? ' bad' : ''}`}>{statusText(call)}</span>
      <span class="cell latency mono">{latency(call)}</span>
      <span class="cell upstream" title={call.executed ? 'The upstream was reached' : 'The upstream was not reached'}>
        {call.executed ? '↑' : '–'}
      </span>
      <span class="cell effects mono">{props.effects ? `✎${props.effects}` : ''}</span>
      <span class="cell model muted">{modelText(call)}</span>
    </>
  )
}
