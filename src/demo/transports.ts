/** Pick how the lab's agent reaches its service. */
import { startProxyDemoTransport } from './proxy-demo-transport.js'
import { inProcessTransport, type DemoTransport } from './run-demo.js'

export const DEMO_VIAS = ['proxy', 'in-process', 'mcp'] as const
export type DemoVia = (typeof DEMO_VIAS)[number]

export async function demoTransportFor(via: DemoVia): Promise<DemoTransport & { close?: () => Promise<void> }> {
  switch (via) {
    case 'in-process':
      return inProcessTransport
    case 'proxy':
      return startProxyDemoTransport()
    case 'mcp':
      return startProxyDemoTransport({ mcp: true })
  }
}
