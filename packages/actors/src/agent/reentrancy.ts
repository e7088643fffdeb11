/**
 * Calls that come back into a worker serving one call at a time (a browser
 * tab: platform/async-scope.browser.ts). Such a worker numbers the calls it
 * serves; a call it makes while serving one carries `meta.waitedBy`, the
 * servers waiting on its answer as `[name, turn]` pairs, and every worker
 * passes the list on to the calls it makes while serving that call. A call
 * that arrives at a tab naming the tab and the turn it is serving now came
 * back from that turn: queued, it would wait for the call it is itself
 * waited on by, so it is refused at once with {@link ReentrantCallError}.
 * See docs/browser.md.
 * @module
 */
import { ReentrantCallError } from '@tensorbus/core';
import type { CallMeta } from './call-context.js';
import { isCount, isWorkerName } from './wire-checks.js';

/** Longest list a call carries; a longer chain keeps its newest entries. */
export const MAX_WAITED_BY = 16;

/** Servers waiting on a call's answer: `[worker name, turn it is serving]`, oldest first. */
export type WaitedBy = Array<[string, number]>;

/** True when `value` is absent or a well-formed {@link WaitedBy} (checked as a request is parsed). */
export function isWaitedByOrAbsent(value: unknown): boolean {
  if (value === undefined) return true;
  return (
    Array.isArray(value) &&
    value.length <= MAX_WAITED_BY &&
    value.every((entry) => Array.isArray(entry) && entry.length === 2 && isWorkerName(entry[0]) && isCount(entry[1]))
  );
}

/**
 * The `waitedBy` of a call `self` makes now: that of the call it is serving
 * (`served`, undefined outside any), and `self` itself when it serves one
 * call at a time and is serving turn `turn`. Undefined when nobody waits.
 */
export function waitedByOnward(served: CallMeta | undefined, self: string, turn: number | undefined): WaitedBy | undefined {
  const upstream = served?.waitedBy as WaitedBy | undefined;
  if (turn === undefined) return upstream;
  const list: WaitedBy = [...(upstream ?? []), [self, turn]];
  return list.length > MAX_WAITED_BY ? list.slice(list.length - MAX_WAITED_BY) : list;
}

/** Throws {@link ReentrantCallError} when `meta` shows the call came back from turn `turn` that `self` is serving. */
export function refuseComingBack(meta: CallMeta, fn: string, self: string, turn: number | undefined): void {
  if (turn === undefined || meta.waitedBy === undefined) return;
  if ((meta.waitedBy as WaitedBy).some(([name, n]) => name === self && n === turn)) {
    throw new ReentrantCallError(
      `worker '${self}' serves one call at a time and is waiting, in the call it serves, on the call from '${meta.from}' to '${fn}': a call back into it cannot be served before that call ends`,
    );
  }
}
