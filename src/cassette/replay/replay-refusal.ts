/**
 * How a strict replay answers a request it refuses (a mismatch, one too many, or any request after
 * the replay diverged): a status the model SDKs do not retry, so the agent's first call fails at once
 * instead of after the SDK's backoff (409 was retried: 10 s to fail). OpenAI and Anthropic (Node and
 * Python) retry 408, 409, 429 and 5xx unless `x-should-retry` says otherwise; the AI SDK's
 * APICallError retries the same statuses and reads no header. 422: the request is well formed, the
 * cassette cannot answer it. The JSON body keeps the error code (`ERR_CASSETTE_MISMATCH`, …).
 * One place: the replay source, the MSW handlers and intercept() all answer through it.
 */
export const REPLAY_REFUSAL_STATUS = 422

/** Sent with every refusal: the SDKs that read `x-should-retry` obey it before the status rules. */
export const REPLAY_REFUSAL_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json', 'x-should-retry': 'false' }
