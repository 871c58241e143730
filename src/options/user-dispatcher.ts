/**
 * An undici dispatcher the user passes in (`dispatcher` of `intercept()`, `stormHandlers()`,
 * `startProxy()`, `startReplayServer()`): an Agent, Pool, ProxyAgent or composed dispatcher of
 * undici 7 (toolstorm's own) or undici 8 (what users install today, and what Node 26 bundles).
 * The two majors' types differ in parts toolstorm never calls (a legacy handler's `onBodySent`),
 * so an undici 8 Agent would not type-check as undici 7's `Dispatcher`: the option asks only for
 * a dispatcher's two methods, and toolstorm calls them as both majors define them (`dispatch` with
 * the `onRequestStart`… handler, and `request`). Held by test/interceptors/users-undici-8.test.ts.
 */
import type { Dispatcher } from 'undici'

export type UserDispatcher = Dispatcher | { dispatch(...args: never[]): unknown; request(...args: never[]): unknown }

/** The user's dispatcher, called as undici 7 types it (undici 8 takes the same calls). */
export function asDispatcher(dispatcher: UserDispatcher): Dispatcher {
  return dispatcher as Dispatcher
}
