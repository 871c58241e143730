import { describe, expect, it } from 'vitest'
import { parseTraceparent } from './traceparent.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const SPAN = '00f067aa0ba902b7'

describe('parseTraceparent', () => {
  it('reads the trace id and the parent span id of a version-00 value, in any case', () => {
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-01`)).toEqual({ traceId: TRACE, parentSpanId: SPAN })
    expect(parseTraceparent(`00-${TRACE.toUpperCase()}-${SPAN}-00`)).toEqual({ traceId: TRACE, parentSpanId: SPAN })
  })

  it('reads the first four fields of a later version, as the spec asks', () => {
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-future`)).toEqual({ traceId: TRACE, parentSpanId: SPAN })
  })

  it.each([
    ['absent', undefined],
    ['too short', `00-${TRACE}-${SPAN}`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with extra fields', `00-${TRACE}-${SPAN}-01-x`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['non-hex digits', `00-${TRACE.replace('4', 'g')}-${SPAN}-01`],
    ['longer than 512 characters', `01-${TRACE}-${SPAN}-01-${'x'.repeat(600)}`],
  ])('ignores %s', (_name, value) => {
    expect(parseTraceparent(value)).toBeNull()
  })
})
