/**
 * Opening the CA checks it at once but leaves the certificate generator (@peculiar/x509, about a
 * third of a forward-mode proxy's start) for the first leaf it signs: a proxy that sees no HTTPS
 * never loads it, and the leaves it signs are unchanged. Each case runs in a fresh Node process,
 * as a proxy's start does (the test process may have loaded the generator already).
 */
import { execFile } from 'node:child_process'
import { chmod, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { ROOT } from '../helpers/cli.js'
import { temporaryFolder } from '../helpers/teardown.js'

const run = promisify(execFile)

/** Runs `body` after opening the CA in `dir` in a fresh process; prints what it reports as JSON. */
async function inFreshProcess(dir: string, body: string): Promise<Record<string, unknown>> {
  const script = `
    import { X509Certificate, webcrypto } from 'node:crypto'
    import { openCertificateAuthority } from ${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/proxy/index.js')).href)}
    // reflect-metadata, the generator's first import, defines Reflect.getMetadata when it loads.
    const generatorLoaded = () => typeof Reflect.getMetadata === 'function'
    const out = {}
    try {
      const { ca, created } = await openCertificateAuthority(${JSON.stringify(dir)})
      Object.assign(out, { created, loadedAfterOpen: generatorLoaded() })
      ${body}
    } catch (error) { out.error = error.message }
    console.log(JSON.stringify(out))`
  const file = path.join(dir, '..', `check-${Math.random().toString(36).slice(2)}.mjs`)
  await writeFile(file, script)
  const { stdout } = await run(process.execPath, [file])
  return JSON.parse(stdout) as Record<string, unknown>
}

describe('the CA loads its certificate generator on the first leaf it signs', () => {
  it('opens an existing CA without it, then signs a leaf for 127.0.0.1 and localhost that verifies against the CA', async () => {
    const dir = path.join(await temporaryFolder('toolstorm-ca-signer-'), 'ca')
    expect(await inFreshProcess(dir, '')).toEqual({ created: true, loadedAfterOpen: true })
    const opened = await inFreshProcess(dir, `
      const keys = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify'])
      const leaf = await ca.issueLeaf(['127.0.0.1', 'localhost'], keys.publicKey)
      const certificate = new X509Certificate(leaf.pem)
      const authority = new X509Certificate(ca.certificatePem)
      Object.assign(out, {
        loadedAfterLeaf: generatorLoaded(),
        verifies: certificate.verify(authority.publicKey) && certificate.checkIssued(authority),
        names: certificate.subjectAltName,
        serverAuth: certificate.keyUsage,
      })`)
    expect(opened).toEqual({ created: false, loadedAfterOpen: false, loadedAfterLeaf: true, verifies: true, names: 'IP Address:127.0.0.1, DNS:localhost', serverAuth: ['1.3.6.1.5.5.7.3.1'] })
  })

  it('still refuses a bad CA when it is opened, before any leaf', async () => {
    const dir = path.join(await temporaryFolder('toolstorm-ca-signer-'), 'ca')
    await inFreshProcess(dir, '')
    await chmod(path.join(dir, 'ca-key.pem'), 0o644)
    const refused = await inFreshProcess(dir, '')
    expect(refused.error).toMatch(/ca-key\.pem is readable by other users \(mode 0644\)/)
    await chmod(path.join(dir, 'ca-key.pem'), 0o600)
    await writeFile(path.join(dir, 'ca.pem'), 'not a certificate\n')
    expect((await inFreshProcess(dir, '')).error).toMatch(/ca\.pem is not a PEM certificate/)
  })
})
