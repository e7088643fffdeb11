/**
 * How an observed call learns its bytes each way: the profiler's record of
 * the call (agent/profiler.ts) is handed to the probe of the observed call
 * it belongs to, found through the call's async scope.
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** What the profiler knows of a call once it ended. */
export interface ProbedCall {
  requestBytes: number;
  responseBytes: number;
}

/** Told of its call's record. */
export type CallProbe = (call: ProbedCall) => void;

/** The probe of the observed call running now. */
export const probeScope = new AsyncLocalStorage<CallProbe>();

/** Hands the profiler's record of a call to the observed call it belongs to, if any. */
export function probeCall(call: ProbedCall): void {
  probeScope.getStore()?.(call);
}
