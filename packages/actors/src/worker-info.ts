/**
 * Who a worker is: its name on the bus and its id (its rank in a static group).
 * @module
 */
import { InvalidArgumentError } from '@tensorbus/core';

/** A worker of the group [torch.distributed.rpc.WorkerInfo]. */
export interface WorkerInfo {
  /** Unique name in the namespace. */
  readonly name: string;
  /** Rank in a static group (0..worldSize-1); an assigned unique id in a dynamic one. */
  readonly id: number;
}

/** Worker names: letters, digits, `_`, `:` and `-`, 1 to 127 characters. */
export const WORKER_NAME_PATTERN = /^[A-Za-z0-9_:-]{1,127}$/;

/** Throws {@link InvalidArgumentError} unless `name` is a valid worker name. */
export function validateWorkerName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !WORKER_NAME_PATTERN.test(name)) {
    throw new InvalidArgumentError(
      `invalid worker name ${JSON.stringify(name)}: use 1 to 127 letters, digits, '_', ':' or '-'`,
    );
  }
}

/** True when `value` looks like a {@link WorkerInfo}. */
export function isWorkerInfo(value: unknown): value is WorkerInfo {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as WorkerInfo).name === 'string' &&
    typeof (value as WorkerInfo).id === 'number'
  );
}
