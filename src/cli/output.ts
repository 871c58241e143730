/** Printing for the CLI: results to stdout, diagnostics with the `[toolstorm]` prefix to stderr. */
import { ERROR_CODES, MESSAGE_PREFIX, ToolstormError } from '../errors.js'

/**
 * A reader that stops reading (`toolstorm inspect FILE | head`) closes the pipe: the next write
 * fails with EPIPE, and unheard that 'error' ended the process with a stack trace (#36). Set once
 * for every command (main.ts): the rest of the output is dropped, the command runs to its end and
 * keeps its exit code (a failed check still exits 1 under `set -o pipefail`). Other errors of the
 * stream are not this case and are left alone.
 */
export function dropOutputWhenPipeCloses(streams: readonly NodeJS.WriteStream[] = [process.stdout, process.stderr]): void {
  for (const stream of streams) {
    let closed = false
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (!closed && error.code !== 'EPIPE') throw error
      closed = true
    })
  }
}

export function printLine(line = ''): void {
  process.stdout.write(line + '\n')
}

export function printError(message: string): void {
  process.stderr.write(`${MESSAGE_PREFIX} ${message}\n`)
}

/** Print an error (with its details and code) and return the exit code it maps to. */
export function reportError(error: unknown): number {
  if (error instanceof ToolstormError) {
    printError(error.message)
    if (error.details && !error.message.includes(error.details)) for (const line of error.details.split('\n')) process.stderr.write(`  ${line}\n`)
    process.stderr.write(`  (${error.code})\n`)
    return ERROR_CODES[error.code].exit
  }
  const err = error as NodeJS.ErrnoException
  printError(`Unexpected error: ${err?.message ?? String(error)}`)
  if (process.env.TOOLSTORM_DEBUG) process.stderr.write(`${err?.stack ?? ''}\n`)
  return ERROR_CODES.ERR_INTERNAL.exit
}
