/**
 * A test upstream's own CA and server certificates, made at test time with @peculiar/x509 (the
 * library toolstorm uses) but not with toolstorm's CA code, so the two stay independent.
 */
import 'reflect-metadata'
import * as x509 from '@peculiar/x509'
import { webcrypto } from 'node:crypto'

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0])
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' }
const DAY_MS = 86_400_000

export interface ServerCertificate {
  readonly key: string
  readonly cert: string
}

export interface TestCa {
  /** The CA certificate (PEM): trust it to reach servers it signed. */
  readonly certPem: string
  /** A server certificate for these DNS names / IP addresses. */
  issue(names: readonly string[]): Promise<ServerCertificate>
}

async function keyPem(key: webcrypto.CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY')
}

export async function createTestCa(name = 'upstream test CA'): Promise<TestCa> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    signingAlgorithm: ALG,
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 30 * DAY_MS),
    extensions: [new x509.BasicConstraintsExtension(true, 0, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true)],
  })
  return {
    certPem: ca.toString('pem'),
    async issue(names) {
      const leafKeys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair
      const leaf = await x509.X509CertificateGenerator.create({
        subject: `CN=${names[0]}`,
        issuer: ca.subjectName,
        publicKey: leafKeys.publicKey,
        signingKey: keys.privateKey,
        signingAlgorithm: ALG,
        notBefore: new Date(Date.now() - DAY_MS),
        notAfter: new Date(Date.now() + 30 * DAY_MS),
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          new x509.SubjectAlternativeNameExtension(names.map((value) => ({ type: /^[\d.]+$|:/.test(value) ? 'ip' : 'dns', value }))),
          await x509.AuthorityKeyIdentifierExtension.create(keys.publicKey),
        ],
      })
      return { key: await keyPem(leafKeys.privateKey), cert: leaf.toString('pem') }
    },
  }
}
