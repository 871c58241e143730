import { describe, expect, it } from 'vitest'
import { mcpScenario } from '../helpers/mcp-scenario.js'


const FLAKY_QUOTES = { seed: 2026, rules: [{ name: 'flaky-quote', route: 'tools/call get_quote', kind: 'tool_error' as const, probability: 0.5, limit: 3 }] }

/** The ordinals of `get_quote` calls that failed, over 12 calls, with `extra` MCP calls before each. */
async function failedQuotes(extra: number): Promise<number[]> {
  const scenario = await mcpScenario('reverse', FLAKY_QUOTES)
  const { client } = await scenario.connect()
  const failed: number[] = []
  for (let i = 1; i <= 12; i++) {
    for (let j = 0; j < extra; j++) {
      await client.listTools()
      await client.callTool({ name: 'create_shipment', arguments: { order_id: `o-${i}-${j}` } })
    }
    if ((await client.callTool({ name: 'get_quote', arguments: { order_id: `o-${i}` } })).isError) failed.push(i)
  }
  await scenario.close()
  return failed
}

describe('per-tool schedules over MCP', () => {
  it('draws the same seeded schedule for a tool in every run, whatever other MCP calls come between', async () => {
    const alone = await failedQuotes(0)
    const again = await failedQuotes(0)
    const mixed = await failedQuotes(2)
    // Probability 0.5 with a limit of 3: some calls fail, never more than 3.
    expect(alone.length).toBeGreaterThan(0)
    expect(alone.length).toBeLessThanOrEqual(3)
    expect(again).toEqual(alone)
    expect(mixed).toEqual(alone)
  })
})
