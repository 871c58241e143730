/** A CONNECT client that leaves before its tunnel is up, as browsers do when they close. */
import net from 'node:net'

/**
 * Open `CONNECT host:443` and leave: `before-tunnel` half-closes right after the request,
 * `mid-handshake` once the tunnel is open and a partial TLS ClientHello was sent. Either way
 * the client sends its FIN and keeps reading: it abandoned the tunnel without closing it.
 */
export async function abandonConnect(proxyUrl: string, when: 'before-tunnel' | 'mid-handshake'): Promise<net.Socket> {
  const { hostname, port } = new URL(proxyUrl)
  const socket = net.connect(Number(port), hostname)
  socket.on('error', () => undefined)
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write('CONNECT updates.example.com:443 HTTP/1.1\r\nHost: updates.example.com:443\r\n\r\n')
  if (when === 'before-tunnel') {
    socket.end()
    return socket
  }
  await new Promise((resolve) => socket.once('data', resolve))
  // A TLS handshake record header and the start of a ClientHello: the rest never comes.
  socket.end(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]))
  return socket
}
