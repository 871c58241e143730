/** Calls to the admin API, each with the bearer token. Errors keep the API's `details` lines. */
import { saveBlob } from '../shared/download.js'

export class AdminRequestError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null,
    readonly details: readonly string[],
  ) {
    super(message)
  }
}

export interface AdminClient {
  readonly token: string
  request(method: string, path: string, init?: { body?: string; contentType?: string; signal?: AbortSignal }): Promise<Response>
  /** Throws an `AdminRequestError` for a non-2xx answer. */
  json<T>(method: string, path: string, init?: { body?: string; contentType?: string }): Promise<T>
}

/** Reads the error body `{"error":{"type","code","message","details"?}}` (docs/errors.md). */
async function failure(response: Response): Promise<AdminRequestError> {
  let error: { code?: unknown; message?: unknown; details?: unknown } = {}
  try {
    const body = (await response.json()) as { error?: typeof error } | null
    if (body && typeof body.error === 'object' && body.error !== null) error = body.error
  } catch {
    // Not JSON: keep the status.
  }
  const details = Array.isArray(error.details) ? error.details.filter((line): line is string => typeof line === 'string') : []
  return new AdminRequestError(typeof error.message === 'string' ? error.message : `HTTP ${response.status}`, response.status, typeof error.code === 'string' ? error.code : null, details)
}

export function createAdminClient(token: string): AdminClient {
  const request: AdminClient['request'] = (method, path, init = {}) =>
    fetch(path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(init.contentType ? { 'content-type': init.contentType } : {}) },
      cache: 'no-store',
      ...(init.body !== undefined ? { body: init.body } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
    })
  return {
    token,
    request,
    async json<T>(method: string, path: string, init = {}) {
      const response = await request(method, path, init)
      if (!response.ok) throw await failure(response)
      return (await response.json()) as T
    },
  }
}

/** Whether a GET answers 2xx; the body is not downloaded (the request is aborted after the head). */
export async function probe(client: AdminClient, path: string): Promise<boolean> {
  const controller = new AbortController()
  try {
    const response = await client.request('GET', path, { signal: controller.signal })
    return response.ok
  } catch {
    return false
  } finally {
    controller.abort()
  }
}

/** GET a document and offer it as a download; resolves with the response (its headers may say more). */
export async function download(client: AdminClient, path: string, fileName: string): Promise<Response> {
  const response = await client.request('GET', path)
  if (!response.ok) throw await failure(response)
  saveBlob(fileName, await response.blob())
  return response
}
