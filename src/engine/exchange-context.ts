/**
 * The exchange whose upstream work is running in this async context, so `storm.effect()` inside
 * an in-process tool handler needs no call id.
 */
import { AsyncLocalStorage } from 'node:async_hooks'

export const exchangeContext = new AsyncLocalStorage<{ readonly exchangeId: string; readonly stormId: string }>()
