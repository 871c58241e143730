/**
 * The HTTPS options of proxy-running commands (`--ca-dir`, `--connect-port`, `--tunnel-unmatched`,
 * `--upstream-ca`, `--insecure-skip-upstream-tls-verification`) turned into `startProxy` options.
 * @see docs/https.md
 */
import path from 'node:path'
import type { ProxyOptions } from '../proxy/proxy-server.js'
import { defaultCaDir, openCertificateAuthority } from '../proxy/tls/certificate-authority.js'
import { readCaFile } from '../proxy/tls/upstream-tls.js'
import { printError } from './output.js'

export interface HttpsArgs {
  target: string[]
  'ca-dir'?: string
  'connect-port': number[]
  'tunnel-unmatched': boolean
  'upstream-ca': string[]
  'insecure-skip-upstream-tls-verification': boolean
}

type HttpsProxyOptions = Pick<ProxyOptions, 'ca' | 'connectPorts' | 'tunnelUnmatched' | 'upstreamCa' | 'insecureSkipUpstreamTlsVerification' | 'onCertificateRefused'>

export interface HttpsArgsUse {
  /**
   * The traffic is being recorded: `--tunnel-unmatched` is ignored (with a warning), because a
   * tunnelled host would be missing from the cassette without a trace.
   */
  recording?: boolean
  /** Open (or create) the CA. Default: in forward mode (no `--target`). */
  openCa?: boolean
}

/** Validate the flags, open (or create) the CA in forward mode, read the upstream CAs. */
export async function httpsOptionsFromArgs(args: HttpsArgs, use: HttpsArgsUse = {}): Promise<HttpsProxyOptions> {
  const upstreamCa = args['upstream-ca'].map((file) => readCaFile(file))
  const tunnelUnmatched = args['tunnel-unmatched'] && !use.recording
  if (args['tunnel-unmatched'] && use.recording) {
    printError('--tunnel-unmatched is ignored while recording: every CONNECT is intercepted, so that no host is missing from the cassette.')
  }
  const options: HttpsProxyOptions = {
    connectPorts: args['connect-port'],
    tunnelUnmatched,
    upstreamCa,
    insecureSkipUpstreamTlsVerification: args['insecure-skip-upstream-tls-verification'],
  }
  if (options.insecureSkipUpstreamTlsVerification) {
    printError('WARNING: upstream HTTPS certificates are NOT verified (--insecure-skip-upstream-tls-verification): anyone on the network path can read and change this traffic. Prefer --upstream-ca FILE.')
  }
  if (!(use.openCa ?? args.target.length === 0)) return options
  const dir = args['ca-dir'] ? path.resolve(args['ca-dir']) : defaultCaDir()
  const { ca, created } = await openCertificateAuthority(dir)
  if (created) printError(`created a new CA in ${dir}. Run "toolstorm ca${args['ca-dir'] ? ` --dir ${dir}` : ''}" to see how to trust it.`)
  const warned = new Set<string>()
  return {
    ...options,
    ca,
    onCertificateRefused: (host, reason) => {
      if (warned.has(host) || warned.size > 100) return
      warned.add(host)
      printError(`a client refused the certificate for ${host} (${reason}): it does not trust the toolstorm CA. Trust ${ca.certificatePath} in that client (see "toolstorm ca").`)
    },
  }
}
