/**
 * `toolstorm ca [--dir DIR]`: create the local CA once (or find it), print where its certificate
 * is and how to trust it in each client. `toolstorm proxy` uses the same folder by default.
 */
import path from 'node:path'
import type { Argv, CommandModule } from 'yargs'
import { CA_KEY_FILE, defaultCaDir, openCertificateAuthority, type CertificateAuthority } from '../../proxy/tls/certificate-authority.js'
import { printLine } from '../output.js'
import { docsUrl } from '../../docs-url.js'

export interface CaArgs {
  dir?: string
  'path-only': boolean
}

/** How to trust the CA in each client the issue names; `proxyUrl` is the default proxy address. */
export function trustInstructions(ca: CertificateAuthority, proxyUrl = 'http://127.0.0.1:8787'): string[] {
  const cert = ca.certificatePath ?? '<ca.pem>'
  return [
    `Trust it in each client that goes through "toolstorm proxy" (forward mode, HTTPS_PROXY=${proxyUrl}):`,
    `  Node.js  NODE_EXTRA_CA_CERTS=${cert}  (read at start; Node 20's fetch ignores HTTPS_PROXY: use setGlobalDispatcher(new EnvHttpProxyAgent()) from undici)`,
    `  curl     curl -x ${proxyUrl} --cacert ${cert} https://…`,
    `  Python   SSL_CERT_FILE=${cert} (urllib, httpx)  REQUESTS_CA_BUNDLE=${cert} (requests)`,
    `curl --cacert, SSL_CERT_FILE and REQUESTS_CA_BUNDLE replace the default roots; NODE_EXTRA_CA_CERTS adds to them. See ${docsUrl('https.md')}.`,
  ]
}

export const caCommand: CommandModule<object, CaArgs> = {
  command: 'ca',
  describe: 'Create (once) the local CA that intercepts HTTPS in forward mode, and print how to trust it',
  builder: (yargs: Argv) =>
    yargs
      .option('dir', { type: 'string', describe: 'CA folder (default: $TOOLSTORM_CA_DIR, else $XDG_CONFIG_HOME/toolstorm/ca, else ~/.toolstorm/ca)' })
      .option('path-only', { type: 'boolean', default: false, describe: 'Print only the certificate path (for NODE_EXTRA_CA_CERTS=$(toolstorm ca --path-only))' }) as unknown as Argv<CaArgs>,
  async handler(args) {
    const dir = args.dir ? path.resolve(args.dir) : defaultCaDir()
    const { ca, created } = await openCertificateAuthority(dir)
    if (args['path-only']) return printLine(ca.certificatePath ?? '')
    printLine(`toolstorm CA certificate: ${ca.certificatePath} (${created ? 'created' : 'already there'})`)
    printLine(`  subject: ${ca.subject} · SHA-256 ${ca.fingerprint} · expires ${ca.notAfter.toISOString().slice(0, 10)}`)
    printLine(`  private key: ${path.join(dir, CA_KEY_FILE)} (owner-only; it never leaves this folder)`)
    printLine()
    for (const line of trustInstructions(ca)) printLine(line)
    printLine()
    printLine('Whoever holds the private key can impersonate any HTTPS site to clients that trust this CA: trust it only where you test, and delete the folder to retire it.')
  },
}
