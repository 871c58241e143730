/**
 * Per-host leaf certificates for intercepted HTTPS, made on first use and kept in memory only
 * (never written to disk). The CA itself may be made on first use too: a proxy that never
 * intercepts a TLS connection never makes (or writes) one. One EC P-256 key pair serves every leaf of this process, so a new
 * host costs one signature (~5 ms) and a known host costs a map lookup.
 *
 * @example
 * const leaves = new LeafCertificates(ca)
 * const context = await leaves.contextFor(['api.openai.com'])
 * new tls.TLSSocket(socket, { isServer: true, secureContext: context })
 */
import { webcrypto } from 'node:crypto'
import tls from 'node:tls'
import type { CertificateAuthority } from './certificate-authority.js'
import { EC_P256, loadX509 } from './x509.js'

/** Hosts remembered at once; the least recently used is forgotten first. */
const DEFAULT_MAX_ENTRIES = 1000
/** A leaf this close to its expiry is made again. */
const RENEW_BEFORE_MS = 86_400_000

interface Entry {
  readonly context: Promise<tls.SecureContext>
  notAfter: number
}

interface LeafKeys {
  readonly publicKey: webcrypto.CryptoKey
  readonly privateKeyPem: string
}

/** The CA itself, or a function that makes (or opens) it when the first leaf is needed. */
export type CertificateAuthoritySource = CertificateAuthority | (() => Promise<CertificateAuthority>)

export class LeafCertificates {
  readonly #source: CertificateAuthoritySource
  #ca: Promise<CertificateAuthority> | null = null
  readonly #maxEntries: number
  readonly #cache = new Map<string, Entry>()
  #keys: Promise<LeafKeys> | null = null

  constructor(ca: CertificateAuthoritySource, options: { maxEntries?: number } = {}) {
    this.#source = ca
    this.#maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES
  }

  /** The CA, made on first use when given as a function (a failure is not kept: the next leaf tries again). */
  authority(): Promise<CertificateAuthority> {
    const source = this.#source
    if (typeof source !== 'function') return Promise.resolve(source)
    this.#ca ??= source().catch((error: unknown) => {
      this.#ca = null
      throw error
    })
    return this.#ca
  }

  /** Hosts with a leaf in the cache. */
  get size(): number {
    return this.#cache.size
  }

  /**
   * A TLS context that presents a leaf for `names` (DNS names or IP addresses), signed by the
   * CA. Concurrent calls for the same names share one signature.
   */
  contextFor(names: readonly string[]): Promise<tls.SecureContext> {
    const key = names.map((name) => name.toLowerCase()).join(',')
    const cached = this.#cache.get(key)
    if (cached && cached.notAfter - RENEW_BEFORE_MS > Date.now()) {
      // Most recently used goes last: Map keeps insertion order.
      this.#cache.delete(key)
      this.#cache.set(key, cached)
      return cached.context
    }
    const entry: Entry = { context: this.#issue(names, (notAfter) => (entry.notAfter = notAfter)), notAfter: Number.POSITIVE_INFINITY }
    entry.context.catch(() => {
      if (this.#cache.get(key) === entry) this.#cache.delete(key)
    })
    this.#cache.delete(key)
    this.#cache.set(key, entry)
    if (this.#cache.size > this.#maxEntries) this.#cache.delete(this.#cache.keys().next().value as string)
    return entry.context
  }

  async #issue(names: readonly string[], setNotAfter: (notAfter: number) => void): Promise<tls.SecureContext> {
    const [ca, keys] = await Promise.all([this.authority(), this.#leafKeys()])
    const leaf = await ca.issueLeaf(names, keys.publicKey)
    setNotAfter(leaf.notAfter.getTime())
    return tls.createSecureContext({ key: keys.privateKeyPem, cert: leaf.pem, minVersion: 'TLSv1.2' })
  }

  #leafKeys(): Promise<LeafKeys> {
    this.#keys ??= (async () => {
      const x509 = await loadX509()
      const pair = (await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair
      const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', pair.privateKey)
      return { publicKey: pair.publicKey, privateKeyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') }
    })()
    return this.#keys
  }
}
