/**
 * How the proxy verifies the real HTTPS servers it forwards to. By default: against Node's
 * bundled Mozilla roots, plus `NODE_EXTRA_CA_CERTS`, as any Node client does. `upstreamCa` adds
 * CAs (a test upstream's own CA). Verification is only ever turned off by a loudly named option.
 */
import { readFileSync } from 'node:fs'
import { X509Certificate } from 'node:crypto'
import tls from 'node:tls'
import { ConfigError, ToolstormError } from '../../errors.js'

export interface UpstreamTlsOptions {
  /** Extra CA certificates (PEM text) trusted for upstream HTTPS, on top of the default roots. */
  readonly upstreamCa?: readonly string[]
  /** Do not verify upstream certificates at all. Anyone on the path can then read and change the traffic. */
  readonly insecureSkipUpstreamTlsVerification?: boolean
}

/** TLS options for the upstream connector (undici `Agent({ connect })`), or undefined for Node's defaults. */
export function upstreamConnectOptions(options: UpstreamTlsOptions): tls.ConnectionOptions | undefined {
  const extra = options.upstreamCa ?? []
  if (options.insecureSkipUpstreamTlsVerification) {
    if (extra.length) throw new ConfigError('Failed to start the proxy: --upstream-ca and --insecure-skip-upstream-tls-verification contradict each other. Keep one of them.', { code: 'ERR_USAGE' })
    return { rejectUnauthorized: false }
  }
  if (!extra.length) return undefined
  // `ca` replaces the default roots instead of adding to them, so they are listed again here.
  // @note Built once: a context with ~145 roots takes 50–120 ms of CPU to build, and tls.connect
  // would build it again for every new upstream connection.
  return { secureContext: tls.createSecureContext({ ca: [...tls.rootCertificates, ...nodeExtraCaCerts(), ...extra] }) }
}

/** Read a PEM file of one or more CA certificates, checking each one parses; `flag` names it in errors. */
export function readCaFile(file: string, flag = '--upstream-ca'): string {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : String(code ?? error)
    throw new ToolstormError('ERR_FILE_UNREADABLE', `Failed to read ${flag} ${file}: ${reason}. Pass a PEM file of CA certificates.`, { cause: error })
  }
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  if (!blocks.length) throw new ConfigError(`Failed to read ${flag} ${file}: it holds no PEM certificate. Expected "-----BEGIN CERTIFICATE-----" blocks.`, { code: 'ERR_USAGE' })
  for (const [index, block] of blocks.entries()) {
    try {
      new X509Certificate(block)
    } catch (error) {
      throw new ConfigError(`Failed to read ${flag} ${file}: certificate ${index + 1} does not parse (${(error as Error).message}). Pass a PEM file of CA certificates.`, { code: 'ERR_USAGE' })
    }
  }
  return blocks.join('\n') + '\n'
}

/** The certificates Node itself adds from NODE_EXTRA_CA_CERTS (Node warns on its own when the file is bad). */
function nodeExtraCaCerts(): string[] {
  const file = process.env.NODE_EXTRA_CA_CERTS
  if (!file) return []
  try {
    return readFileSync(file, 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  } catch {
    return []
  }
}
