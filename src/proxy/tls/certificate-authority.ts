/**
 * The local certificate authority that signs the leaf certificates toolstorm presents when it
 * intercepts HTTPS in forward mode. It lives in one folder: `ca.pem` (the certificate clients
 * trust) and `ca-key.pem` (the private key, mode 0600, in a folder created 0700).
 *
 * The key is read into a non-extractable WebCrypto key and is never written anywhere else: not
 * in reports, logs, cassettes or the admin API. `toJSON()` and `util.inspect` show only public
 * facts (path, fingerprint, subject, expiry).
 *
 * @example
 * const { ca, created } = await openCertificateAuthority(defaultCaDir())
 * console.log(ca.certificatePath) // trust this file in the client
 */
import { createPrivateKey, randomBytes, sign, verify, webcrypto, X509Certificate, type KeyObject } from 'node:crypto'
import { promises as fs } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { inspect } from 'node:util'
import { CertificateAuthorityError, ToolstormError } from '../../errors.js'
import { writeFileAtomic } from '../../io/write-file-atomic.js'
import { EC_P256, loadX509, type X509 } from './x509.js'

export const CA_CERTIFICATE_FILE = 'ca.pem'
export const CA_KEY_FILE = 'ca-key.pem'

const DAY_MS = 86_400_000
/** CA lifetime: 10 years. */
const CA_VALIDITY_DAYS = 3650
/** Leaf lifetime: one year (under the 398-day cap some clients enforce). Leaves live in memory only. */
const LEAF_VALIDITY_DAYS = 365
/** Backdate certificates so that a client whose clock runs a little behind still accepts them. */
const BACKDATE_MS = 2 * DAY_MS
/** How long to wait for another process that is creating the same CA right now. */
const CONCURRENT_CREATION_WAIT_MS = 5_000
/** X.509 caps a CommonName at 64 characters; longer names go in the SAN only. */
const MAX_COMMON_NAME = 64

type CryptoKey = webcrypto.CryptoKey
type SigningAlgorithm = { name: string; hash: string; namedCurve?: string }
type Signer = { x509: X509; issuer: InstanceType<X509['Name']>; authorityKeyId: InstanceType<X509['AuthorityKeyIdentifierExtension']> }

/**
 * Where `toolstorm ca` and `toolstorm proxy` keep the CA: `$TOOLSTORM_CA_DIR`, else
 * `$XDG_CONFIG_HOME/toolstorm/ca`, else `~/.toolstorm/ca`.
 */
export function defaultCaDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TOOLSTORM_CA_DIR) return path.resolve(env.TOOLSTORM_CA_DIR)
  if (env.XDG_CONFIG_HOME) return path.join(path.resolve(env.XDG_CONFIG_HOME), 'toolstorm', 'ca')
  return path.join(os.homedir(), '.toolstorm', 'ca')
}

/** A leaf certificate, PEM, and when it stops being valid. */
export interface IssuedLeaf {
  readonly pem: string
  readonly notAfter: Date
}

export class CertificateAuthority {
  /** The certificate clients trust (PEM). */
  readonly certificatePem: string
  /** `<dir>/ca.pem`, or null for a CA that lives in memory only. */
  readonly certificatePath: string | null
  /** The CA folder, or null for a CA that lives in memory only. */
  readonly dir: string | null
  /** SHA-256 fingerprint of the certificate, `AB:CD:…`. */
  readonly fingerprint: string
  readonly subject: string
  readonly notAfter: Date
  readonly #signingKey: CryptoKey
  readonly #algorithm: SigningAlgorithm
  /**
   * What signing a leaf needs from @peculiar/x509, made on the first leaf: loading it costs ~200 ms
   * of a forward-mode proxy's start (a third of it), and a proxy that sees no HTTPS never signs.
   * The CA itself is checked at once (Node's X509Certificate and the key, in
   * loadCertificateAuthority), so a bad CA still fails the start.
   */
  #signer: Promise<Signer> | null = null

  private constructor(init: {
    certificatePem: string
    dir: string | null
    signingKey: CryptoKey
    algorithm: SigningAlgorithm
  }) {
    const parsed = new X509Certificate(init.certificatePem)
    this.certificatePem = init.certificatePem
    this.dir = init.dir
    this.certificatePath = init.dir === null ? null : path.join(init.dir, CA_CERTIFICATE_FILE)
    this.fingerprint = parsed.fingerprint256
    this.subject = parsed.subject.replace(/\n/g, ', ')
    this.notAfter = new Date(parsed.validTo)
    this.#signingKey = init.signingKey
    this.#algorithm = init.algorithm
  }

  #signerOf(): Promise<Signer> {
    this.#signer ??= (async () => {
      const x509 = await loadX509()
      const caCertificate = new x509.X509Certificate(this.certificatePem)
      // The issuer is copied as parsed, so it matches the CA's subject byte for byte.
      return { x509, issuer: caCertificate.subjectName, authorityKeyId: await x509.AuthorityKeyIdentifierExtension.create(caCertificate.publicKey) }
    })()
    // A failure is not kept: the next leaf tries again, as LeafCertificates does for its CA.
    this.#signer.catch(() => (this.#signer = null))
    return this.#signer
  }

  /** @internal Build from a certificate and its (already checked) private key. */
  static async fromKeyObject(certificatePem: string, key: KeyObject, dir: string | null): Promise<CertificateAuthority> {
    const algorithm = signingAlgorithmOf(key)
    if (typeof algorithm === 'string') throw new CertificateAuthorityError(`Failed to load the toolstorm CA${dir ? ` from ${dir}` : ''}: ${algorithm}. Delete the folder and run "toolstorm ca" to make a new CA.`)
    const der = key.export({ type: 'pkcs8', format: 'der' })
    let signingKey: CryptoKey
    try {
      // Non-extractable: from here on, no code can read the key back out of memory.
      signingKey = await webcrypto.subtle.importKey('pkcs8', der, algorithm, false, ['sign'])
    } finally {
      der.fill(0)
    }
    return new CertificateAuthority({ certificatePem, dir, signingKey, algorithm })
  }

  /** Sign a server certificate for `names` (DNS names or IP addresses; the first one is the CN). */
  async issueLeaf(names: readonly string[], publicKey: CryptoKey): Promise<IssuedLeaf> {
    const { x509, issuer, authorityKeyId } = await this.#signerOf()
    const now = Date.now()
    const notAfter = new Date(Math.min(now + LEAF_VALIDITY_DAYS * DAY_MS, this.notAfter.getTime()))
    const first = names[0] ?? ''
    const certificate = await x509.X509CertificateGenerator.create({
      serialNumber: serialNumber(),
      subject: first.length <= MAX_COMMON_NAME ? [{ CN: [first] }] : [{ O: ['toolstorm'] }],
      issuer,
      notBefore: new Date(now - BACKDATE_MS),
      notAfter,
      publicKey,
      signingKey: this.#signingKey,
      signingAlgorithm: this.#algorithm,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension(names.map((name) => ({ type: isIpAddress(name) ? 'ip' : 'dns', value: name }))),
        authorityKeyId,
      ],
    })
    return { pem: certificate.toString('pem'), notAfter }
  }

  toJSON(): Record<string, unknown> {
    return { certificatePath: this.certificatePath, fingerprint: this.fingerprint, subject: this.subject, notAfter: this.notAfter.toISOString() }
  }

  [inspect.custom](): string {
    return `CertificateAuthority ${inspect(this.toJSON())}`
  }
}

/**
 * Open the CA in `dir`, creating it (once) when the folder holds none. Safe when several
 * processes start at once: one creates it, the others wait and load it.
 */
export async function openCertificateAuthority(dir: string): Promise<{ ca: CertificateAuthority; created: boolean }> {
  const folder = path.resolve(dir)
  const certificatePath = path.join(folder, CA_CERTIFICATE_FILE)
  const keyPath = path.join(folder, CA_KEY_FILE)
  if (await exists(certificatePath)) return { ca: await loadCertificateAuthority(folder), created: false }
  if (await exists(keyPath)) {
    await waitForCertificate(folder)
    return { ca: await loadCertificateAuthority(folder), created: false }
  }
  const created = await createCertificateAuthorityFiles(folder)
  if (!created) await waitForCertificate(folder)
  return { ca: await loadCertificateAuthority(folder), created }
}

/** A CA that lives in this process's memory only (the library default for forward mode). */
export async function createInMemoryCertificateAuthority(): Promise<CertificateAuthority> {
  const { certificatePem, privateKeyPem } = await generateCertificateAuthority()
  return CertificateAuthority.fromKeyObject(certificatePem, createPrivateKey(privateKeyPem), null)
}

/** Load and check the CA in `dir`: both files present, key private to the owner, key matching, not expired. */
export async function loadCertificateAuthority(dir: string): Promise<CertificateAuthority> {
  const folder = path.resolve(dir)
  const certificatePath = path.join(folder, CA_CERTIFICATE_FILE)
  const keyPath = path.join(folder, CA_KEY_FILE)
  const fail = (why: string, cause?: unknown) => new CertificateAuthorityError(`Failed to load the toolstorm CA from ${folder}: ${why}`, cause === undefined ? undefined : { cause })
  const certificatePem = await readText(certificatePath, folder)
  const keyText = await readText(keyPath, folder).catch((error: unknown) => {
    if ((error as { cause?: NodeJS.ErrnoException }).cause?.code === 'ENOENT') {
      throw fail(`${CA_CERTIFICATE_FILE} exists but ${CA_KEY_FILE} does not. Restore the key, or delete the folder to make a new CA (clients must then trust the new certificate).`)
    }
    throw error
  })
  if (process.platform !== 'win32') {
    const mode = (await fs.stat(keyPath)).mode & 0o777
    if ((mode & 0o077) !== 0) throw fail(`${CA_KEY_FILE} is readable by other users (mode ${mode.toString(8).padStart(4, '0')}). Run "chmod 600 ${keyPath}", or delete the folder to make a new CA.`)
  }
  let certificate: X509Certificate
  try {
    certificate = new X509Certificate(certificatePem)
  } catch (error) {
    throw fail(`${CA_CERTIFICATE_FILE} is not a PEM certificate (${(error as Error).message}). Delete the folder and run "toolstorm ca" to make a new CA.`, error)
  }
  if (!certificate.ca) throw fail(`${CA_CERTIFICATE_FILE} is not a CA certificate (basicConstraints CA:FALSE). Delete the folder and run "toolstorm ca" to make a new CA.`)
  const notAfter = new Date(certificate.validTo)
  if (notAfter.getTime() <= Date.now()) throw fail(`its certificate expired on ${notAfter.toISOString().slice(0, 10)}. Delete the folder and run "toolstorm ca" to make a new CA, then trust the new certificate.`)
  let key: KeyObject
  try {
    key = createPrivateKey(keyText)
  } catch (error) {
    throw fail(`${CA_KEY_FILE} is not a PEM private key (${(error as Error).message}). Delete the folder and run "toolstorm ca" to make a new CA.`, error)
  }
  if (!keyMatches(key, certificate)) throw fail(`${CA_KEY_FILE} does not belong to ${CA_CERTIFICATE_FILE}. Restore the matching key, or delete the folder to make a new CA.`)
  return CertificateAuthority.fromKeyObject(certificatePem.trim() + '\n', key, folder)
}

/** Write a new CA into `dir`. Returns false when another process got there first. */
async function createCertificateAuthorityFiles(folder: string): Promise<boolean> {
  const fail = (why: string, cause: unknown) =>
    new CertificateAuthorityError(`Failed to create the toolstorm CA in ${folder}: ${why}. Choose another folder with --ca-dir (or TOOLSTORM_CA_DIR).`, { cause, code: 'ERR_FILE_UNREADABLE' })
  try {
    // Only the folders created here get 0700; an existing folder keeps its mode (the key file is 0600 anyway).
    await fs.mkdir(folder, { recursive: true, mode: 0o700 })
  } catch (error) {
    throw fail(describeFsError(error), error)
  }
  const { certificatePem, privateKeyPem } = await generateCertificateAuthority()
  const keyPath = path.join(folder, CA_KEY_FILE)
  let handle: fs.FileHandle
  try {
    // 'wx': exclusive. Whoever creates the key file first owns the creation.
    handle = await fs.open(keyPath, 'wx', 0o600)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false
    throw fail(describeFsError(error), error)
  }
  try {
    await handle.writeFile(privateKeyPem)
    await handle.sync()
  } finally {
    await handle.close()
  }
  // The certificate appears last, atomically: its presence means the CA is complete.
  await writeFileAtomic(path.join(folder, CA_CERTIFICATE_FILE), certificatePem, { mode: 0o644 })
  return true
}

async function generateCertificateAuthority(): Promise<{ certificatePem: string; privateKeyPem: string }> {
  const x509 = await loadX509()
  const keys = (await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair
  const now = Date.now()
  const id = randomBytes(4).toString('hex')
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(),
    name: [{ CN: [`toolstorm CA ${id}`] }, { O: ['toolstorm (local testing CA)'] }],
    keys,
    signingAlgorithm: EC_P256,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + CA_VALIDITY_DAYS * DAY_MS),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  })
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)
  return { certificatePem: certificate.toString('pem') + '\n', privateKeyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') + '\n' }
}

/** The WebCrypto algorithm that signs with this key, or why the key cannot be used. */
function signingAlgorithmOf(key: KeyObject): SigningAlgorithm | string {
  const type = key.asymmetricKeyType
  if (type === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
  if (type === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve
    if (curve === 'prime256v1') return EC_P256
    if (curve === 'secp384r1') return { name: 'ECDSA', namedCurve: 'P-384', hash: 'SHA-384' }
    return `its EC key uses the curve ${curve ?? 'unknown'} (expected P-256 or P-384)`
  }
  return `its key type is ${type ?? 'unknown'} (expected EC P-256, P-384 or RSA)`
}

function keyMatches(key: KeyObject, certificate: X509Certificate): boolean {
  const probe = randomBytes(32)
  try {
    return verify('sha256', probe, certificate.publicKey, sign('sha256', probe, key))
  } catch {
    return false
  }
}

/** A positive 127-bit serial number, hex (RFC 5280: positive, at most 20 octets). */
function serialNumber(): string {
  const bytes = randomBytes(16)
  bytes[0] = (bytes[0] as number) & 0x7f
  return bytes.toString('hex')
}

function isIpAddress(name: string): boolean {
  return /^[\d.]+$/.test(name) || name.includes(':')
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file)
    return true
  } catch {
    return false
  }
}

async function waitForCertificate(folder: string): Promise<void> {
  const deadline = Date.now() + CONCURRENT_CREATION_WAIT_MS
  while (Date.now() < deadline) {
    if (await exists(path.join(folder, CA_CERTIFICATE_FILE))) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new CertificateAuthorityError(
    `Failed to load the toolstorm CA from ${folder}: ${CA_KEY_FILE} exists but ${CA_CERTIFICATE_FILE} does not (an interrupted creation?). Delete the folder and run "toolstorm ca" again.`,
  )
}

async function readText(file: string, folder: string): Promise<string> {
  try {
    return await fs.readFile(file, 'utf8')
  } catch (error) {
    throw new ToolstormError('ERR_FILE_UNREADABLE', `Failed to load the toolstorm CA from ${folder}: cannot read ${path.basename(file)} (${describeFsError(error)}). Check the folder's permissions, or choose another one with --ca-dir.`, { cause: error })
  }
}

function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code
  switch (code) {
    case 'ENOENT':
      return 'no such file'
    case 'EACCES':
    case 'EPERM':
      return 'permission denied'
    case 'ENOTDIR':
    case 'EEXIST':
      return 'a file is in the way of the folder'
    case 'EISDIR':
      return 'it is a folder'
    default:
      return String(code ?? (error as Error)?.message ?? error)
  }
}
