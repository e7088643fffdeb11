/**
 * How the autograd protocol calls another worker: outside any context (so the
 * call is neither tagged nor recorded), and how it tells silence (a timeout)
 * from an answer.
 * @module
 */
import { RpcTimeoutError } from '@tensorbus/core';
import type { AgentHost } from '../agent/host.js';
import { recordingScope } from './tape.js';

/** A protocol call: made outside any context, so it is neither tagged nor recorded. */
export function protocolCall(host: AgentHost, to: string, fn: string, args: unknown[], timeoutMs?: number): Promise<unknown> {
  return recordingScope.exit(() => host.call(to, fn, args, timeoutMs === undefined ? {} : { timeoutMs }));
}

/** True for a timeout, as such or wrapped (a backward failure caused by a call's timeout). */
export function isTimeout(error: unknown): boolean {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof RpcTimeoutError || (e as { code?: unknown }).code === 'RPC_TIMEOUT' || (e as { remoteCode?: unknown }).remoteCode === 'RPC_TIMEOUT') return true;
  }
  return false;
}
