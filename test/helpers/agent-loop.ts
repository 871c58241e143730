/**
 * A small agent loop over a fake model (test/helpers/model-upstream.ts) and a tool at `/ship`: the
 * model answers with tool calls, the agent calls the tool and sends the results back, until the
 * model answers in text. In-process (`agentLoop`), or as a script for a child process (`AGENT_SCRIPT`).
 */

/** The loop in this process: the model at `modelBase`, the tool at `toolUrl`; the line it ends with. */
export async function agentLoop(modelBase: string, toolUrl: string, prompt: string): Promise<string> {
  const tools = [{ type: 'function', function: { name: 'ship', parameters: { type: 'object' } } }]
  const messages: unknown[] = [{ role: 'user', content: prompt }]
  for (let turn = 1; turn <= 5; turn++) {
    const answer = await fetch(`${modelBase}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-test', messages, tools }) })
    if (answer.status !== 200) return `model answered ${answer.status}: ${await answer.text()}`
    const message = ((await answer.json()) as { choices: Array<{ message: { content: string | null; tool_calls?: Array<{ id: string; function: { arguments: string } }> } }> }).choices[0]!.message
    messages.push(message)
    if (!message.tool_calls) return `agent: ${message.content}`
    for (const call of message.tool_calls) {
      const result = await fetch(`${toolUrl}/ship`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: call.function.arguments })
      messages.push({ role: 'tool', tool_call_id: call.id, content: await result.text() })
    }
  }
  return 'no answer'
}

/**
 * The same loop as an ES module script: `node agent.mjs PROMPT`, the model through
 * `TOOLSTORM_PROXY_URL` (what `toolstorm record`/`replay` set), the tool at `TOOL_URL`. It prints
 * `agent: …` and exits 0, or prints `model answered STATUS` and exits 3.
 */
export const AGENT_SCRIPT = `const prompt = process.argv[2]
const tools = [{ type: 'function', function: { name: 'ship', parameters: { type: 'object' } } }]
const messages = [{ role: 'user', content: prompt }]
for (let turn = 1; turn <= 5; turn++) {
  const answer = await fetch(process.env.TOOLSTORM_PROXY_URL + '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-test', messages, tools }) })
  if (answer.status !== 200) { console.log('model answered', answer.status); process.exit(3) }
  const message = (await answer.json()).choices[0].message
  messages.push(message)
  if (!message.tool_calls) { console.log('agent:', message.content); process.exit(0) }
  for (const call of message.tool_calls) {
    const result = await fetch(process.env.TOOL_URL + '/ship', { method: 'POST', headers: { 'content-type': 'application/json' }, body: call.function.arguments })
    messages.push({ role: 'tool', tool_call_id: call.id, content: await result.text() })
  }
}
process.exit(4)
`
