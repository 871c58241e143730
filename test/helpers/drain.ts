/** Iterate a stream to its end or its error: what a client got, and how it ended. */
export async function drain<T>(stream: AsyncIterable<T>): Promise<{ items: T[]; error: Error | null }> {
  const items: T[] = []
  try {
    for await (const item of stream) items.push(item)
    return { items, error: null }
  } catch (error) {
    return { items, error: error as Error }
  }
}
