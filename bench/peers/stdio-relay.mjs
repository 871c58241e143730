// Reference floor for `toolstorm mcp`: a bare Node process between the client and a stdio server
// that only pipes stdin to the child and the child's stdout back, parsing nothing. What it adds
// over a direct launch is the extra process hop itself (two more pipe writes and reads a call).
// Run as plain `node` (no tsx): its start is a bare process's too.
import { spawn } from 'node:child_process'

const [file, ...args] = process.argv.slice(2)
const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'inherit'] })
process.stdin.pipe(child.stdin)
child.stdout.pipe(process.stdout)
child.stdin.on('error', () => undefined)
process.stdout.on('error', () => child.kill('SIGTERM'))
child.on('close', (code, signal) => (signal ? process.kill(process.pid, signal) : process.exit(code ?? 1)))
