/**
 * @peculiar/x509, loaded on first use and ready to sign: `reflect-metadata` first (its tsyringe
 * dependency throws "tsyringe requires a reflect polyfill" without it), then Node's WebCrypto as
 * the crypto provider.
 *
 * @note Loaded lazily: importing it costs ~190 ms, which every CLI command would otherwise pay.
 * Node 20's `crypto.X509Certificate` parses and verifies certificates but cannot create them.
 */
import { webcrypto } from 'node:crypto'

export type X509 = typeof import('@peculiar/x509')

let loading: Promise<X509> | null = null

export function loadX509(): Promise<X509> {
  loading ??= (async () => {
    await import('reflect-metadata')
    const x509 = await import('@peculiar/x509')
    x509.cryptoProvider.set(webcrypto as unknown as Parameters<X509['cryptoProvider']['set']>[0])
    return x509
  })()
  return loading
}

/** ECDSA over P-256 with SHA-256: fast to generate and sign (~5 ms a leaf), accepted by every TLS client. */
export const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const
