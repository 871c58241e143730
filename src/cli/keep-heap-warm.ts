/**
 * Long-running servers (proxy, record, replay) turn off V8's idle-time memory reducer.
 *
 * @note After about 8 s without traffic the reducer shrinks the heap, and the next burst paid for
 * it for many seconds: a proxy that had sat idle 12-15 s between load runs used 350-510 µs of CPU
 * per 64 KiB request against 104-164 µs with the reducer off, in the same interleaved runs (and
 * about 110 µs without the idle spell). Agents under test are bursty (think time, one test after
 * another), so this is the proxy's normal load, not a benchmark artefact. The cost: the heap keeps
 * its working size while idle (≈ 130 MiB RSS instead of ≈ 100 after a 64 KiB load). Only the
 * start delay is changed: set at run time it took effect (the RSS no longer fell after an idle
 * spell), where `--no-memory-reducer` set at run time did not (it only works on node's command line).
 */
import v8 from 'node:v8'

/** Never start the reducer (the delay is a 32-bit int of milliseconds: ~24 days). */
const NEVER_MS = 2 ** 31 - 1

export function keepHeapWarm(): void {
  v8.setFlagsFromString(`--gc-memory-reducer-start-delay-ms=${NEVER_MS}`)
}
