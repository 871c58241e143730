/** Pick how the lab's agent reaches its service. */
import { inProcessTransport, type DemoTransport } from './run-demo.js'

export type DemoVia = 'in-process'

export async function demoTransportFor(via: DemoVia): Promise<DemoTransport> {
  switch (via) {
    case 'in-process':
      return inProcessTransport
  }
}
