import type { CommandModule } from 'yargs'
import { SCENARIO_IDS, SCENARIOS } from '../../demo/scenarios.js'
import { printLine } from '../output.js'

export const scenariosCommand: CommandModule = {
  command: 'scenarios',
  describe: 'List the shipping lab scenarios',
  handler() {
    for (const id of SCENARIO_IDS) printLine(`${id.padEnd(18)} ${SCENARIOS[id].title}`)
  },
}
