/**
 * The fault kinds a storm knows, keyed by their stable `type`: the kernel's own and those its
 * plug-ins bring (as Toxiproxy's toxics registry, but assembled once and passed in rather than
 * filled by side effects). The rules file schema is built from it, so a kind no plug-in brings is
 * refused where it is written, with a did-you-mean.
 *
 * @example
 * const faults = new FaultRegistry([...KERNEL_FAULTS, ...plugins.flatMap((plugin) => plugin.faults ?? [])])
 */
import { ConfigError } from '../../errors.js'
import { closestName } from '../closest-name.js'
import type { Fault } from './fault.js'
import { configSchemaFor, type ConfigSchema } from '../schema/config.js'
import { ruleSchemaFor, type RuleSchema } from '../schema/rule.js'
import { reportSchemaFor, type ReportSchema } from '../schema/report.js'

export class FaultRegistry {
  /** Every kind, in the order the faults were given (the docs and error messages list them so). */
  readonly kinds: readonly [string, ...string[]]
  readonly #byKind: ReadonlyMap<string, Fault>
  #ruleSchema: RuleSchema | undefined
  #configSchema: ConfigSchema | undefined
  #reportSchema: ReportSchema | undefined

  constructor(faults: Iterable<Fault<string, never>>) {
    const byKind = new Map<string, Fault>()
    for (const fault of faults) {
      if (byKind.has(fault.type)) throw new ConfigError(`Failed to register a fault: two faults are named "${fault.type}". A kind is one fault; give the new one a name of its own.`)
      byKind.set(fault.type, fault as unknown as Fault)
    }
    if (byKind.size === 0) throw new ConfigError('Failed to register faults: none were given. Start from KERNEL_FAULTS.')
    this.#byKind = byKind
    this.kinds = [...byKind.keys()] as [string, ...string[]]
  }

  /** The faults, in registration order. */
  get faults(): readonly Fault[] {
    return [...this.#byKind.values()]
  }

  has(kind: string): boolean {
    return this.#byKind.has(kind)
  }

  /** The fault implementing `kind`. */
  faultFor(kind: string): Fault {
    const fault = this.#byKind.get(kind)
    if (fault) return fault
    const near = closestName(kind, this.kinds)
    throw new ConfigError(`Failed to find a fault: unknown fault kind "${kind}".${near ? ` Did you mean "${near}"?` : ''} Use one of ${this.kinds.map((k) => `"${k}"`).join(', ')}.`)
  }

  /** One rule, its extra fields those of its kind (built on first use). */
  get ruleSchema(): RuleSchema {
    return (this.#ruleSchema ??= ruleSchemaFor(this.faults, this.kinds))
  }

  /** The whole rules file. */
  get configSchema(): ConfigSchema {
    return (this.#configSchema ??= configSchemaFor(this.ruleSchema))
  }

  /** A report of a storm with these faults. */
  get reportSchema(): ReportSchema {
    return (this.#reportSchema ??= reportSchemaFor(this.ruleSchema, this.kinds))
  }
}
