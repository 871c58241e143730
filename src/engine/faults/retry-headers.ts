/**
 * `retry-after` in whole seconds (rounded up: the header has no fractions) and `retry-after-ms`,
 * which both providers' SDKs read first; nothing when there is no hint to give.
 */
export function retryHeaders(seconds: number | undefined): Record<string, string> {
  if (seconds === undefined) return {}
  return { 'retry-after': String(Math.ceil(seconds)), 'retry-after-ms': String(Math.round(seconds * 1000)) }
}
