/** A model call as reports and cassettes keep it: its own file, so model-call readers and faults need not import the report schema. */
import { z } from 'zod'

/**
 * A model call recognised on the wire. Metadata only: prompts and outputs are never stored.
 * Tokens are null when the provider reported no usage (an OpenAI chat stream without
 * `stream_options.include_usage`: then `usageMissing`), or the answer broke off before it.
 */
export const modelCallSchema = z.strictObject({
  /** The wire format: `openai` (and OpenAI-compatible servers) or `anthropic`. */
  provider: z.enum(['openai', 'anthropic']),
  api: z.enum(['chat.completions', 'responses', 'messages']),
  /** The model the provider answered with, else the one requested. */
  model: z.string().max(200).nullable(),
  /** Input tokens; for Anthropic including cache reads and writes. */
  inputTokens: z.int().min(0).nullable(),
  outputTokens: z.int().min(0).nullable(),
  /** Whether the response was an event stream. */
  streamed: z.boolean(),
  /** The provider's answer reached its end (final event, whole JSON body) without usage, whatever the client got: tokens unknown, not zero. */
  usageMissing: z.literal(true).optional(),
})

export type ModelCall = z.infer<typeof modelCallSchema>
