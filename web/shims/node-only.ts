/**
 * Stands in for the Node-only transports `src/demo/run-demo.ts` imports (MSW interception and
 * the node:http shipping service). The browser lab passes its own transport, so these are
 * never called; if they were, they say so.
 */
function nodeOnly(what: string): never {
  throw new Error(`Failed to ${what} in the browser: it needs Node.js. The browser lab uses the in-memory transport.`)
}

export function intercept(): never {
  return nodeOnly('intercept requests')
}

export function startShippingService(): never {
  return nodeOnly('start the shipping service')
}
