/**
 * Preloaded into a process a benchmark measures (`node --expose-gc --import ./bench/heap-probe.mjs …`):
 * on a message from its parent it runs a full GC and answers with its memory, so heap growth is
 * measured after GC, not at whatever moment a sample lands. Plain JavaScript: the measured
 * process runs the built bin, without a TypeScript loader.
 */
if (process.send) {
  process.on('message', (message) => {
    if (message !== 'heap') return
    globalThis.gc?.()
    globalThis.gc?.()
    const usage = process.memoryUsage()
    process.send?.({ heapUsed: usage.heapUsed, rss: usage.rss, external: usage.external, gc: typeof globalThis.gc === 'function' })
  })
  // The channel must not keep the measured process alive: it exits on SIGTERM as it would alone.
  process.channel?.unref()
}
