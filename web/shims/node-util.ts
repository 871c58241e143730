/** `node:util` for the browser build: `promisify` for callback-last functions. */
export function promisify<A extends unknown[], R>(fn: (...args: [...A, (error: Error | null, result?: R) => void]) => void): (...args: A) => Promise<R> {
  return (...args: A) => new Promise<R>((resolve, reject) => fn(...args, (error, result) => (error ? reject(error) : resolve(result as R))))
}

export default { promisify }
