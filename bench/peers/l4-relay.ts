/** Reference floor: a TCP relay with no HTTP parsing at all (what any userspace proxy pays for sockets). */
import net from 'node:net'
import type { AddressInfo } from 'node:net'

const target = new URL(process.argv[2] as string)
const server = net.createServer((client) => {
  const upstream = net.connect(Number(target.port), target.hostname)
  client.pipe(upstream)
  upstream.pipe(client)
  client.on('error', () => upstream.destroy())
  upstream.on('error', () => client.destroy())
})
server.listen(0, '127.0.0.1', () => console.log((server.address() as AddressInfo).port))
