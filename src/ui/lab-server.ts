/**
 * The browser lab's static server: `toolstorm lab`. The page runs the engine in the browser, so
 * this server only hands out files (the same files work from any static server, offline).
 *
 * @example
 * const lab = await startLabServer({ port: 0 })
 * console.log(lab.url)
 * await lab.close()
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { serveStatic, type StaticSite } from './static-files.js'
import { UI_BUILD_HINT, uiAssetsDir } from './ui-assets.js'

export interface LabServerOptions {
  /** Default 127.0.0.1. */
  readonly host?: string
  /** 0 picks a free port. Default 8789. */
  readonly port?: number
  /** Directory of the built lab (default `dist/lab`). */
  readonly assetsDir?: string
}

export interface LabServer {
  readonly url: string
  close(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

export const DEFAULT_LAB_PORT = 8789

export async function startLabServer(options: LabServerOptions = {}): Promise<LabServer> {
  const host = options.host ?? '127.0.0.1'
  const site: StaticSite = { root: options.assetsDir ?? uiAssetsDir('lab'), mount: '', missingHint: UI_BUILD_HINT }
  const server = http.createServer({ maxHeaderSize: 16 * 1024, requestTimeout: 30_000 }, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://lab')
    serveStatic(site, req, res, url).then(
      (handled) => {
        if (handled) return
        res.writeHead(405, { allow: 'GET, HEAD', 'content-length': 0 })
        res.end()
      },
      () => res.destroy(),
    )
  })
  server.keepAliveTimeout = 2_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? DEFAULT_LAB_PORT, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  let closing: Promise<void> | null = null
  const close = () =>
    (closing ??= new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    }))
  return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/`, close, [Symbol.asyncDispose]: close }
}
