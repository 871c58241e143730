import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { describe, expect, it, onTestFinished } from 'vitest'
import { SERVER_MESSAGE_CHANNEL, ServerMessageTracker, type ServerMessageEvent } from './server-messages.js'

/** The events published while the test runs, as [exchange, when, progress, method]. */
function listen(): Array<[string, string, boolean, string]> {
  const heard: Array<[string, string, boolean, string]> = []
  const listener = (event: unknown) => {
    const { exchangeId, when, progress, line } = event as ServerMessageEvent
    heard.push([exchangeId, when, progress, (JSON.parse(line.toString()) as { method: string }).method])
  }
  subscribe(SERVER_MESSAGE_CHANNEL, listener)
  onTestFinished(() => void unsubscribe(SERVER_MESSAGE_CHANNEL, listener))
  return heard
}

const line = (message: Record<string, unknown>) => [Buffer.from(JSON.stringify(message)), message] as const
const progress = (token: unknown) => line({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1 } })
const log = line({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } })
const request = (id: number, token?: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 't', ...(token === undefined ? {} : { _meta: { progressToken: token } }) } })

describe('ServerMessageTracker', () => {
  it('gives a progress notification to the call whose token it names, another to the latest call running, and holds those that come between calls for the next one', () => {
    const heard = listen()
    const tracker = new ServerMessageTracker()
    expect(tracker.wanted).toBe(true)
    tracker.notification(...log)
    tracker.began('a', request(1, 1))
    tracker.began('b', request(2, 2))
    tracker.notification(...progress(1))
    tracker.notification(...log)
    tracker.notification(...progress(99))
    tracker.ended('b')
    tracker.notification(...log)
    tracker.ended('a')
    tracker.notification(...progress(2))
    tracker.began('c', request(3))
    expect(heard).toEqual([
      ['a', 'before', false, 'notifications/message'],
      ['a', 'during', true, 'notifications/progress'],
      ['b', 'during', false, 'notifications/message'],
      ['b', 'during', false, 'notifications/progress'],
      ['a', 'during', false, 'notifications/message'],
      ['c', 'before', false, 'notifications/progress'],
    ])
  })

  it('gives a server request to the latest call running and the client\'s answer to the same call; a request between calls and its answer go to the next call; an answer to nothing the server asked is not told', () => {
    const events: ServerMessageEvent[] = []
    const listener = (event: unknown) => void events.push(event as ServerMessageEvent)
    subscribe(SERVER_MESSAGE_CHANNEL, listener)
    onTestFinished(() => void unsubscribe(SERVER_MESSAGE_CHANNEL, listener))
    const tracker = new ServerMessageTracker()
    const ask = (id: number, method: string) => Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, method, params: {} }))
    const answer = (id: number) => Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, result: {} }))
    tracker.request(ask(0, 'roots/list'), 0)
    tracker.answer(answer(0), 0)
    tracker.began('a', request(1))
    tracker.began('b', request(2))
    tracker.request(ask(1, 'sampling/createMessage'), 1)
    tracker.ended('b')
    tracker.answer(answer(1), 1)
    tracker.answer(answer(1), 1)
    tracker.answer(answer(7), 7)
    expect(events.map(({ exchangeId, when, answers, line }) => [exchangeId, when, answers ?? null, (JSON.parse(line.toString()) as { method?: string }).method ?? 'answer'])).toEqual([
      ['a', 'before', null, 'roots/list'],
      ['a', 'before', 0, 'answer'],
      ['b', 'during', null, 'sampling/createMessage'],
      ['b', 'during', 1, 'answer'],
    ])
  })
})
