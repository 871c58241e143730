/**
 * Admin request bodies are bounded (1 MiB; 16 KiB for effects). A body past the bound is answered
 * `413` with the JSON error body (`ERR_INPUT_TOO_LARGE`), as docs/admin-api.md says, with the
 * connection closed afterwards, rather than a reset the client cannot tell from a crash (#29).
 */
import { execFile } from 'node:child_process'
import http from 'node:http'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { startProxied } from '../helpers/proxied.js'
import { closing } from '../helpers/teardown.js'

const TOO_LARGE = { error: { type: 'admin_error', code: 'ERR_INPUT_TOO_LARGE', message: 'Failed to read the admin request: the body exceeds 1048576 bytes.' } }

/** node:http with a body sent in chunks (no Content-Length): the bound is found while reading. */
function chunked(url: string, token: string, size: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } }, (res) => {
      let body = ''
      res.on('data', (chunk: Buffer) => (body += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    const piece = Buffer.alloc(64 * 1024, 0x20)
    let sent = 0
    const write = () => {
      while (sent < size) {
        sent += piece.length
        if (!req.write(piece)) return void req.once('drain', write)
      }
      req.end()
    }
    write()
  })
}

describe('admin request bodies over the limit', () => {
  it('answers PUT /rules with a 2 MiB body 413 and the error body (fetch, Content-Length known)', async () => {
    const env = closing(await startProxied('reverse'))
    const response = await env.admin('/rules', { method: 'PUT', body: ' '.repeat(2 * 1024 * 1024) })
    expect(response.status).toBe(413)
    expect(await response.json()).toEqual(TOO_LARGE)
    expect(response.headers.get('connection')).toBe('close')
    // The rules in force are untouched, and the admin API keeps answering.
    expect((await env.admin('/rules')).status).toBe(200)
  })

  it('answers a chunked body that grows past the limit 413 and the error body (node:http)', async () => {
    const env = closing(await startProxied('reverse'))
    const answer = await chunked(`${env.proxy.adminUrl}/rules`, env.proxy.token, 3 * 1024 * 1024)
    expect(answer.status).toBe(413)
    expect(JSON.parse(answer.body)).toEqual(TOO_LARGE)
  })

  it('answers curl 413 with the error body for an effect report over 16 KiB', async () => {
    const env = closing(await startProxied('reverse'))
    const body = JSON.stringify({ name: 'shipment', key: 'k'.repeat(20_000), call: 'x' })
    const { stdout } = await promisify(execFile)('curl', ['-s', '-w', '\n%{http_code}', '-X', 'POST', `${env.proxy.adminUrl}/effects`, '-H', 'content-type: application/json', '--data-binary', body])
    const [json, status] = stdout.split('\n')
    expect(status).toBe('413')
    expect(JSON.parse(json as string)).toEqual({ error: { type: 'admin_error', code: 'ERR_INPUT_TOO_LARGE', message: 'Failed to read the admin request: the body exceeds 16384 bytes.' } })
  })
})
