/**
 * A fetch `Request`'s body read before its exchange begins (a plug-in names the request by it:
 * MCP). In-process bodies are read whole anyway, so it is read whole, once, with `read`; the sink
 * forwards the same bytes. `bytes` is null when it is longer than the plug-in's limit.
 */
export async function readWebBody(read: () => Promise<ArrayBuffer>, limit: number): Promise<{ body: Buffer; bytes: Buffer | null }> {
  const body = Buffer.from(await read())
  return { body, bytes: body.byteLength > limit ? null : body }
}
