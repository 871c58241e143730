/** `node:diagnostics_channel` for the browser build: named channels with synchronous subscribers. */
type Listener = (message: unknown, name: string) => void

export class Channel {
  readonly name: string
  readonly #listeners = new Set<Listener>()

  constructor(name: string) {
    this.name = name
  }

  get hasSubscribers(): boolean {
    return this.#listeners.size > 0
  }

  publish(message: unknown): void {
    for (const listener of this.#listeners) listener(message, this.name)
  }

  subscribe(listener: Listener): void {
    this.#listeners.add(listener)
  }

  unsubscribe(listener: Listener): boolean {
    return this.#listeners.delete(listener)
  }
}

const channels = new Map<string, Channel>()

export function channel(name: string): Channel {
  let found = channels.get(name)
  if (!found) {
    found = new Channel(name)
    channels.set(name, found)
  }
  return found
}

export default { channel, Channel }
