/**
 * What the banner of `proxy`, `record`, `replay` and `mcp` says about the admin token (#36). It shows the
 * token only when toolstorm made it (a token given with `--admin-token` is the user's own: never
 * echoed), and only to a terminal unless `--print-admin-token` asks: output that is not a terminal
 * is a log, and a log collector keeps what it gets. Programs read the token from `--ready-json` or
 * `--ready-file` (owner-only); `record`/`replay -- <command>` pass it to the command as
 * `TOOLSTORM_ADMIN_TOKEN`.
 */
import type { Argv } from 'yargs'
import type { ReadyArgs } from './ready.js'

export interface AdminTokenArgs extends ReadyArgs {
  'admin-token'?: string
  'print-admin-token': boolean
}

export function adminTokenOptions<T>(yargs: Argv<T>): Argv<T & AdminTokenArgs> {
  return yargs
    .option('admin-token', { type: 'string', describe: 'Admin bearer token (default: random, shown at start on a terminal)' })
    .option('print-admin-token', { type: 'boolean', default: false, describe: 'Print a generated admin token at start even when the output is not a terminal (a log)' }) as unknown as Argv<T & AdminTokenArgs>
}

/** How the banner names the token: the token itself, or where to find it. `toStderr`: the banner goes to stderr (else stdout). */
export function adminTokenShown(args: Pick<AdminTokenArgs, 'admin-token' | 'print-admin-token'> & Partial<ReadyArgs>, toStderr: boolean): { shown: boolean; instead: string } {
  if (args['admin-token'] !== undefined) return { shown: false, instead: 'the one given with --admin-token' }
  const terminal = (args['ready-json'] || toStderr ? process.stderr : process.stdout).isTTY === true
  if (terminal || args['print-admin-token']) return { shown: true, instead: '' }
  return { shown: false, instead: 'generated, not printed: this output is not a terminal (--print-admin-token prints it; --ready-file FILE writes it to a file)' }
}

/** The banner's token line, and the dashboard link with the token in its fragment when it is shown. */
export function adminTokenLines(token: string, shown: { shown: boolean; instead: string }, usage: string, dashboardUrl: string | null): string[] {
  return [
    `admin token: ${shown.shown ? token : shown.instead}  (${usage})`,
    // The token rides in the fragment: browsers never send it to the server or in a Referer.
    ...(dashboardUrl ? [shown.shown ? `dashboard: ${dashboardUrl}#token=${token}` : `dashboard: ${dashboardUrl} (add #token=<admin token> to the link)`] : []),
  ]
}
