import { X509Certificate, webcrypto } from 'node:crypto'
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { inspect } from 'node:util'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { CA_CERTIFICATE_FILE, CA_KEY_FILE, defaultCaDir, loadCertificateAuthority, openCertificateAuthority } from './certificate-authority.js'
import { EC_P256 } from './x509.js'

let root: string
beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'toolstorm-ca-unit-'))
})
afterEach(async () => {
  await rm(root, { recursive: true, force: true })
})

async function leafKey(): Promise<webcrypto.CryptoKey> {
  return ((await webcrypto.subtle.generateKey(EC_P256, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair).publicKey
}

describe('openCertificateAuthority', () => {
  it('creates the CA once, key owner-only in an owner-only folder, and loads it afterwards', async () => {
    const dir = path.join(root, 'nested', 'ca')
    const first = await openCertificateAuthority(dir)
    expect(first.created).toBe(true)
    expect(first.ca.certificatePath).toBe(path.join(dir, CA_CERTIFICATE_FILE))
    expect((await stat(dir)).mode & 0o777).toBe(0o700)
    expect((await stat(path.join(dir, CA_KEY_FILE))).mode & 0o777).toBe(0o600)
    expect((await stat(path.join(dir, CA_CERTIFICATE_FILE))).mode & 0o777).toBe(0o644)
    const again = await openCertificateAuthority(dir)
    expect(again.created).toBe(false)
    expect(again.ca.fingerprint).toBe(first.ca.fingerprint)
    expect(new X509Certificate(first.ca.certificatePem).ca).toBe(true)
  })

  it('creates one CA when several processes start at once', async () => {
    const dir = path.join(root, 'ca')
    const opened = await Promise.all([1, 2, 3, 4].map(() => openCertificateAuthority(dir)))
    expect(opened.filter((o) => o.created)).toHaveLength(1)
    expect(new Set(opened.map((o) => o.ca.fingerprint)).size).toBe(1)
  })

  it('refuses a key that other users can read', async () => {
    const dir = path.join(root, 'ca')
    await openCertificateAuthority(dir)
    await chmod(path.join(dir, CA_KEY_FILE), 0o644)
    await expect(loadCertificateAuthority(dir)).rejects.toMatchObject({
      code: 'ERR_CA_INVALID',
      message: `Failed to load the toolstorm CA from ${dir}: ${CA_KEY_FILE} is readable by other users (mode 0644). Run "chmod 600 ${path.join(dir, CA_KEY_FILE)}", or delete the folder to make a new CA.`,
    })
  })

  it('refuses a key that belongs to another certificate', async () => {
    const a = path.join(root, 'a')
    const b = path.join(root, 'b')
    await openCertificateAuthority(a)
    await openCertificateAuthority(b)
    await writeFile(path.join(a, CA_KEY_FILE), await readFile(path.join(b, CA_KEY_FILE)), { mode: 0o600 })
    await expect(loadCertificateAuthority(a)).rejects.toMatchObject({ code: 'ERR_CA_INVALID', message: `Failed to load the toolstorm CA from ${a}: ${CA_KEY_FILE} does not belong to ${CA_CERTIFICATE_FILE}. Restore the matching key, or delete the folder to make a new CA.` })
  })

  it('refuses a certificate without its key', async () => {
    const dir = path.join(root, 'ca')
    await openCertificateAuthority(dir)
    await rm(path.join(dir, CA_KEY_FILE))
    await expect(openCertificateAuthority(dir)).rejects.toMatchObject({ code: 'ERR_CA_INVALID', message: expect.stringContaining(`${CA_CERTIFICATE_FILE} exists but ${CA_KEY_FILE} does not.`) })
  })

  it('shows only public facts when printed or serialised', async () => {
    const { ca } = await openCertificateAuthority(path.join(root, 'ca'))
    const key = (await readFile(path.join(root, 'ca', CA_KEY_FILE), 'utf8')).split('\n')[1] as string
    for (const text of [JSON.stringify(ca), inspect(ca, { showHidden: true, depth: 10 }), String(Object.keys(ca))]) {
      expect(text).not.toContain(key)
      expect(text).not.toContain('PRIVATE KEY')
    }
    expect(JSON.parse(JSON.stringify(ca))).toEqual({ certificatePath: ca.certificatePath, fingerprint: ca.fingerprint, subject: ca.subject, notAfter: ca.notAfter.toISOString() })
  })
})

describe('issueLeaf', () => {
  it('signs leaves for DNS names and IP addresses that verify against the CA', async () => {
    const { ca } = await openCertificateAuthority(path.join(root, 'ca'))
    const caCertificate = new X509Certificate(ca.certificatePem)
    const dns = new X509Certificate((await ca.issueLeaf(['api.openai.com', 'alias.test'], await leafKey())).pem)
    expect(dns.verify(caCertificate.publicKey)).toBe(true)
    expect(dns.checkIssued(caCertificate)).toBe(true)
    expect(dns.checkHost('api.openai.com')).toBe('api.openai.com')
    expect(dns.checkHost('alias.test')).toBe('alias.test')
    expect(dns.checkHost('other.test')).toBeUndefined()
    expect(dns.ca).toBe(false)
    const ip = new X509Certificate((await ca.issueLeaf(['127.0.0.1'], await leafKey())).pem)
    expect(ip.checkIP('127.0.0.1')).toBe('127.0.0.1')
    const ipv6 = new X509Certificate((await ca.issueLeaf(['::1'], await leafKey())).pem)
    expect(ipv6.checkIP('::1')).toBe('::1')
  })
})

describe('defaultCaDir', () => {
  it('prefers TOOLSTORM_CA_DIR, then XDG_CONFIG_HOME, then ~/.toolstorm/ca', () => {
    expect(defaultCaDir({ TOOLSTORM_CA_DIR: '/x/ca', XDG_CONFIG_HOME: '/cfg' })).toBe('/x/ca')
    expect(defaultCaDir({ XDG_CONFIG_HOME: '/cfg' })).toBe('/cfg/toolstorm/ca')
    expect(defaultCaDir({})).toBe(path.join(os.homedir(), '.toolstorm', 'ca'))
  })
})
