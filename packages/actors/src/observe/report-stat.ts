/**
 * Application values a worker shows in its stats (the dashboard plots them):
 * a loss, an accuracy, a step count.
 * @module
 */
import { InvalidArgumentError } from '@tensorbus/core';
import { hostOf, type RpcAgent } from '../agent/rpc-agent.js';
import { OBSERVE } from './plugin.js';
import { MAX_REPORTED } from './worker-observations.js';

/** Names of reported values: letters, digits, `_`, `.`, `:` and `-`, 1 to 64 characters. */
const STAT_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * Sets the value `name` of `agent`'s worker to `value`; `tensorbus status`
 * and the dashboard show the latest one (the dashboard plots it over time).
 * At most 64 names per worker.
 * @throws InvalidArgumentError for a bad name, a non-finite value, or a 65th name.
 *
 * @example
 * ```ts
 * reportStat(agent, 'loss', loss);
 * ```
 */
export function reportStat(agent: RpcAgent, name: string, value: number): void {
  if (typeof name !== 'string' || !STAT_NAME.test(name)) throw new InvalidArgumentError(`invalid stat name ${JSON.stringify(String(name).slice(0, 80))}: use 1 to 64 letters, digits, '_', '.', ':' or '-'`);
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new InvalidArgumentError(`stat '${name}' must be a finite number, got ${String(value)}`);
  if (!hostOf(agent).plugin(OBSERVE).observations.report(name, value)) throw new InvalidArgumentError(`worker '${agent.self.name}' already reports ${MAX_REPORTED} stats: '${name}' is one too many`);
}
