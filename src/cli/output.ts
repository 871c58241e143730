/** Printing for the CLI: results to stdout, diagnostics with the `[toolstorm]` prefix to stderr. */
import { ERROR_CODES, MESSAGE_PREFIX, ToolstormError } from '../errors.js'

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
