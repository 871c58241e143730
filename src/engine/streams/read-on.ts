/**
 * Reading a cut stream on: once a fault cut the client, the rest of the upstream's answer is read
 * and dropped, so what a model stream sends last (its usage) is recorded whatever the upstream's
 * pace: a cut call's tokens are what the provider sent for the whole answer (docs/streams.md).
 * Bounded in bytes and in real time (the upstream's own pace, whatever the storm's clock); the
 * call's record is final once it ends, and `callsSettled` waits for that.
 */

/** Bytes read on at most: a long answer's events, its usage among them. */
export const READ_ON_BYTES = 4 * 1024 * 1024
/** Seconds read on at most. */
export const READ_ON_SECONDS = 30

/** Call records still read on, each with the end of its reading. */
const pending = new WeakMap<object, Promise<void>>()

/** Read `iterator` to its end or a bound (then `stop` it); never throws: a break-off keeps what arrived. */
export function readOn(iterator: AsyncIterator<Uint8Array>, stop: (reason: Error) => void, record: object | null): Promise<void> {
  const reading = (async () => {
    const timer = setTimeout(() => stop(new Error(`Stopped reading a cut stream after ${READ_ON_SECONDS}s.`)), READ_ON_SECONDS * 1000)
    timer.unref()
    try {
      for (let bytes = 0; bytes <= READ_ON_BYTES; ) {
        const next = await iterator.next()
        if (next.done) return
        bytes += next.value.length
      }
      stop(new Error(`Stopped reading a cut stream after ${READ_ON_BYTES} bytes.`))
    } catch {
      // The upstream broke off, or was stopped: what arrived is recorded.
    } finally {
      clearTimeout(timer)
      await iterator.return?.().catch(() => undefined)
      if (record) pending.delete(record)
    }
  })()
  if (record) pending.set(record, reading)
  return reading
}

/** Resolves once no call among `calls` is still read on. */
export async function callsSettled(calls: Iterable<object>): Promise<void> {
  const readings: Promise<void>[] = []
  for (const call of calls) {
    const reading = pending.get(call)
    if (reading) readings.push(reading)
  }
  await Promise.all(readings)
}
