import type { Argv, CommandModule } from 'yargs'
import { listenError } from '../../errors.js'
import { LOOPBACK } from '../../proxy/server-pair.js'
import { DEFAULT_LAB_PORT, startLabServer } from '../../ui/lab-server.js'
import { printError, printLine } from '../output.js'
import { untilStopRequested } from '../stop-request.js'
import { LISTEN_PORT, numberOption } from '../numeric-options.js'

interface LabArgs {
  port: number
  host: string
}

export const labCommand: CommandModule<object, LabArgs> = {
  command: 'lab',
  describe: 'Serve the browser lab: the shipping lab running entirely in your browser',
  builder: (yargs: Argv) =>
    yargs
      .option('port', { ...numberOption('port', LISTEN_PORT), default: DEFAULT_LAB_PORT, describe: 'Port (0 picks a free one)' })
      .option('host', { type: 'string', default: '127.0.0.1', describe: 'Interface to listen on' }) as unknown as Argv<LabArgs>,
  async handler(args) {
    if (!LOOPBACK.has(args.host)) printError(`listening on ${args.host}: the lab serves static files only, but anyone who can reach it can load them.`)
    const lab = await startLabServer({ host: args.host, port: args.port }).catch((error: unknown) => {
      throw listenError(error, { host: args.host, port: args.port, server: 'data', name: 'the lab' })
    })
    // Ctrl-C, SIGTERM, or the process that started it exiting (stop-request.ts).
    const stopped = untilStopRequested().then(() => lab.close())
    printLine(`toolstorm lab ${lab.url} (runs in your browser; Ctrl-C stops the server)`)
    await stopped
  },
}
