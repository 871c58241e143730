/**
 * A Vercel AI SDK agent (ai 6.0.326, @ai-sdk/openai 3.0.141, whose default is the Responses API)
 * with one tool, its model stream cut inside the tool call's arguments (#26): what the agent
 * does, for docs/streams.md's table. In-process and through the proxy in reverse mode.
 */
import { createOpenAI } from '@ai-sdk/openai'
import { APICallError, stepCountIs, streamText, tool } from 'ai'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { modelScenarios, type ModelScenario } from '../helpers/model-scenario.js'
import type { Transport } from '../helpers/transports.js'
import { TOOL } from '../helpers/model-upstream.js'

const scenarios = modelScenarios()
let scenario: ModelScenario | null = null

for (const transport of ['intercept', 'reverse'] as const satisfies readonly Transport[]) {
  describe(`a Vercel AI SDK agent with a tool (${transport})`, () => {
    it('fails the step with APICallError on a cut inside the tool arguments: no retry, the tool never runs', async () => {
      scenario = await scenarios.start(transport, { rules: [{ name: 'cut', route: 'POST /v1/responses', kind: 'stream_cut', at: 'tool_arguments', after: 1, calls: [1] }] }, { gapMs: 5 })
      const provider = createOpenAI({ apiKey: 'sk-test', baseURL: `${scenario.base}/v1` })
      const executed: unknown[] = []
      const result = streamText({
        model: provider('gpt-r'),
        prompt: 'Weather in Paris?',
        stopWhen: stepCountIs(3),
        tools: {
          [TOOL.name]: tool({
            inputSchema: z.object({ city: z.string() }),
            execute: (input) => {
              executed.push(input)
              return Promise.resolve({ celsius: 21 })
            },
          }),
        },
      })
      const deltas: string[] = []
      let error: unknown = null
      try {
        for await (const part of result.fullStream) if (part.type === 'tool-input-delta') deltas.push(part.delta)
      } catch (e) {
        error = e
      }
      // fullStream throws (no `error` part): the SDK's default maxRetries (2) does not cover a body that breaks off.
      expect(deltas).toEqual([TOOL.arguments[0]])
      expect(APICallError.isInstance(error)).toBe(true)
      expect((error as Error).message).toBe('Failed to process successful response')
      expect(executed).toEqual([])
      const calls = (await scenario.settled()).calls
      expect(calls.map((call) => [call.route, call.injected, call.error, call.cut?.at])).toEqual([['POST /v1/responses', true, 'STREAM_CUT', 'tool_arguments']])
    })
  })
}
