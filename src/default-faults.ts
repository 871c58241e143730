/**
 * Every fault kind the default plug-ins bring, with the kernel's own: the registry the rules file
 * schema, `lint`, the JSON Schemas, the CLI and the docs see. Assembled here, outside the engine,
 * which knows only its own kinds and takes the rest from whoever makes a storm.
 *
 * A storm made with plug-ins of its own takes their kinds by itself (`createStorm(config, { plugins })`).
 *
 * @example
 * const faults = faultRegistryOf([...defaultPlugins(), myPlugin]) // myPlugin.faults join the kinds
 * parseConfig(rules, 'rules.json', faults)
 */
import type { Fault } from './engine/faults/fault.js'
import { FaultRegistry } from './engine/faults/fault-registry.js'
import { KERNEL_FAULTS } from './engine/faults/kernel-faults.js'
import { MCP_FAULTS } from './mcp/faults/mcp-faults.js'
import { MODEL_CALL_FAULTS } from './model-calls/faults/model-call-faults.js'

/** The kernel's kinds, then the MCP plug-in's, then the model-calls plug-in's (the order the docs list them). */
export const DEFAULT_FAULTS = [...KERNEL_FAULTS, ...MCP_FAULTS, ...MODEL_CALL_FAULTS] as const

export type FaultKind = (typeof DEFAULT_FAULTS)[number]['type']

/** The default registry: every kind a storm made from the package root knows. */
export const defaultFaults = new FaultRegistry(DEFAULT_FAULTS)

export const FAULT_KINDS = defaultFaults.kinds as readonly [FaultKind, ...FaultKind[]]

/** The fault implementing `kind` among the default kinds (a `ConfigError` with a did-you-mean otherwise). */
export function faultFor(kind: string): Fault {
  return defaultFaults.faultFor(kind)
}

export { faultRegistryOf } from './engine/storm.js'

/** The rules file, a rule and a report with the default kinds (the JSON Schemas are generated from these). */
export const configSchema = defaultFaults.configSchema
export const ruleSchema = defaultFaults.ruleSchema
export const reportSchema = defaultFaults.reportSchema
