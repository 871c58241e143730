/**
 * An agent's outbox: fail-open reports queued while the task runs and sent once it has ended, so
 * the task never waits for them. The lab measures the task's time when the agent returns, then
 * drains the outbox before it takes the report: the reports are still on record, and runs stay
 * deterministic on the virtual clock (a report started earlier would spend its delay on the
 * shared clock while the task still runs).
 */
export class Background {
  readonly #queued: Array<() => Promise<unknown>> = []

  /** Queue `task` for after the task; its failure is swallowed (it is fail-open by design). */
  defer(task: () => Promise<unknown>): void {
    this.#queued.push(task)
  }

  /** Send every queued report, in order, including those queued while sending. */
  async drain(): Promise<void> {
    for (let task = this.#queued.shift(); task !== undefined; task = this.#queued.shift()) await task().catch(() => undefined)
  }
}
