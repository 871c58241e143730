/**
 * The HTTPS options of proxy-running commands (`--ca-dir`, `--connect-port`, `--tunnel-unmatched`,
 * `--upstream-ca`, `--insecure-skip-upstream-tls-verification`) turned into `startProxy` options.
 * @see docs/https.md
 */
import { existsSync } from 'node:fs'
import path from 'node:path'
import type { ProxyOptions } from '../proxy/proxy-server.js'
import { CA_CERTIFICATE_FILE, defaultCaDir, openCertificateAuthority } from '../proxy/tls/certificate-authority.js'
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
  /** Use the CA folder (`--ca-dir`, else the one "toolstorm ca" uses). Default: in forward mode (no `--target`). */
  openCa?: boolean
  /**
   * A program asked for the ready line (`--ready-json`, `--ready-file`), or a command runs next to
   * the server (`-- cmd`, told to trust the CA in its environment): its clients need the CA at once.
   */
  announced?: boolean
}

export interface HttpsSetup {
  /** For `startProxy` (and `startReplayServer`). */
  readonly options: HttpsProxyOptions
  /** The CA folder HTTPS is intercepted with, or null when none is used. */
  readonly caDir: string | null
  /** Its certificate (`ca.pem`), what clients trust; null when no CA folder is used. */
  readonly caFile: string | null
}

/**
 * Validate the flags, read the upstream CAs, and name the CA folder. The CA is opened (or created)
 * at start when clients may need it at once (see below), else on the first intercepted TLS
 * handshake: a proxy that sees no HTTPS writes nothing to the home folder.
 */
export async function httpsOptionsFromArgs(args: HttpsArgs, use: HttpsArgsUse = {}): Promise<HttpsSetup> {
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
  if (!(use.openCa ?? args.target.length === 0)) return { options, caDir: null, caFile: null }
  const dir = args['ca-dir'] ? path.resolve(args['ca-dir']) : defaultCaDir()
  const certificatePath = path.join(dir, CA_CERTIFICATE_FILE)
  const open = async () => {
    const { ca, created } = await openCertificateAuthority(dir)
    if (created) printError(`created a new CA in ${dir}. Run "toolstorm ca${args['ca-dir'] ? ` --dir ${dir}` : ''}" to see how to trust it.`)
    return ca
  }
  // Now when clients may need it before the first HTTPS request: it exists already, its folder was
  // named (--ca-dir, TOOLSTORM_CA_DIR: the command after "--" may read ca.pem at start), or a program
  // asked for the ready line, whose "ca" it hands to its clients. Else the default folder in the
  // home folder is made only once HTTPS is intercepted.
  const now = args['ca-dir'] !== undefined || process.env.TOOLSTORM_CA_DIR !== undefined || use.announced === true || existsSync(certificatePath)
  const ca = now
    ? await open()
    : () =>
        open().catch((error: unknown) => {
          // The tunnel that needed it is closed; the reason goes to the console.
          printError(`${error instanceof Error ? error.message : String(error)} HTTPS cannot be intercepted until this is fixed.`)
          throw error
        })
  const warned = new Set<string>()
  return {
    options: {
      ...options,
      ca,
      onCertificateRefused: (host, reason) => {
        if (warned.has(host) || warned.size > 100) return
        warned.add(host)
        printError(`a client refused the certificate for ${host} (${reason}): it does not trust the toolstorm CA. Trust ${certificatePath} in that client (see "toolstorm ca").`)
      },
    },
    caDir: dir,
    caFile: certificatePath,
  }
}

/** The banner line that says which CA intercepts HTTPS and how to trust it. */
export function interceptionLine(caDir: string | null): string[] {
  return caDir === null ? [] : [`HTTPS: CONNECT is intercepted with the CA ${path.join(caDir, CA_CERTIFICATE_FILE)} (trust it in clients: toolstorm ca --dir ${caDir})`]
}
