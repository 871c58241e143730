/**
 * The intercepted requests whose response bodies are still flowing, held strongly.
 *
 * A Node `Request` follows the signal it was built with (the client's) only while the Request
 * object lives: undici keeps its own AbortController through a WeakRef and drops the listener once
 * it is collected. A socket keeps a real fetch alive; an answered interception has none, so after a
 * GC nothing held the request any more, and a client that keeps only its signal (an SDK's stream
 * helper) lost its abort: a stalled body hung it for ever, a relayed one ran to its end.
 */
const held = new Set<Request>()

/** Hold `request` until the returned release is called (idempotent). */
export function holdRequest(request: Request): () => void {
  held.add(request)
  return () => void held.delete(request)
}

/** `body`, holding `request` until it was read to its end, failed or was cancelled. */
export async function* whileHeld<T>(request: Request, body: AsyncIterable<T>): AsyncGenerator<T> {
  const release = holdRequest(request)
  try {
    yield* body
  } finally {
    release()
  }
}
