/**
 * Checks of values that come from the wire before the agent uses them as
 * names, subjects or keys of its state. A message that fails one is dropped
 * (and counted) by the protocol that received it.
 * @module
 */
import { WORKER_NAME_PATTERN } from '../worker-info.js';

/** Instance ids: a random UUID in practice; letters, digits and '-' up to 64. */
const INSTANCE_PATTERN = /^[A-Za-z0-9-]{1,64}$/;

/** True when `value` is a valid worker name. */
export const isWorkerName = (value: unknown): value is string => typeof value === 'string' && WORKER_NAME_PATTERN.test(value);

/** True when `value` is a valid instance id. */
export const isInstance = (value: unknown): value is string => typeof value === 'string' && INSTANCE_PATTERN.test(value);

/** True when `value` is a worker id: -1 (not yet numbered) or a rank. */
export const isWorkerId = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= -1;

/** True when `value` is a non-negative safe integer. */
export const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;
