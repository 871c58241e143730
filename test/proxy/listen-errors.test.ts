import { describe, expect } from 'vitest'
import { PortInUseError, ToolstormError } from '../../src/errors.js'
import { startProxy } from '../../src/proxy/proxy-server.js'
import { test as it } from '../helpers/file-fixtures.js'

// Issue #15 item 5: listening failures that are the caller's mistake are typed errors (exit 2).

describe('startProxy on a port in use', () => {
  it('rejects with PortInUseError naming the server and the option', async ({ taken }) => {
    const data = await startProxy({ port: taken }).catch((error: unknown) => error)
    expect(data).toBeInstanceOf(PortInUseError)
    expect(data).toMatchObject({ code: 'ERR_PORT_IN_USE', server: 'data', port: taken, exitCode: 2, message: `Failed to start the server: port ${taken} on 127.0.0.1 is in use. Pass another port, or port 0 for any free one.` })
    const admin = await startProxy({ port: 0, adminPort: taken }).catch((error: unknown) => error)
    expect(admin).toMatchObject({ code: 'ERR_PORT_IN_USE', server: 'admin', message: `Failed to start the admin API: port ${taken} on 127.0.0.1 is in use. Pass another adminPort, or adminPort 0 for any free one.` })
  })

  it('says a host that is not this machine\'s is a usage error', async () => {
    // 192.0.2.0/24 is reserved for documentation: no machine has it.
    const error = await startProxy({ host: '192.0.2.1', port: 0 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ToolstormError)
    expect(error).toMatchObject({ code: 'ERR_USAGE', message: 'Failed to start the server: cannot listen on "192.0.2.1" (EADDRNOTAVAIL): it is not an address of this machine. Listen on 127.0.0.1 (the default), or on an address this machine has.' })
  })
})
