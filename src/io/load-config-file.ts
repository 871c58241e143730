/** Load a rules file (JSON or YAML) into a validated config; errors name the file and field. */
import { parseConfig } from '../create-storm.js'
import type { StormConfig } from '../engine/schema/config.js'
import { readInputDocument } from './read-input-file.js'

/** Rules files are small; refuse anything over 1 MiB. */
export const MAX_CONFIG_BYTES = 1024 * 1024

export async function loadConfigFile(file: string): Promise<StormConfig> {
  const document = await readInputDocument(file, { yaml: true, maxBytes: MAX_CONFIG_BYTES, what: 'the rules file' })
  return parseConfig(document, file)
}
