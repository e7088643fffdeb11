/**
 * The aggregation server's checks of what a client sends, made before the
 * server keeps or computes anything: who it is (name and ticket), how many
 * samples it claims, which round it asks for, and its weights (as many
 * tensors as the model has, each float32 of the model's shape, every number
 * finite). A failed check throws {@link InvalidArgumentError}, which the
 * caller receives as such (code `INVALID_ARGUMENT`).
 * @module
 */
import { InvalidArgumentError, tf } from '@tensorbus/core';
import type * as TfNamespace from '@tensorflow/tfjs';

/** Longest client name and ticket accepted (a ticket is 32 hex digits). */
const MAX_NAME_LENGTH = 64;

/** The same string, compared in time that does not depend on where they differ. */
function sameSecret(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0);
  return diff === 0;
}

/** The client's name, when `id` is `{ client, ticket }` with the ticket handed out for that name. */
export function checkClient(id: unknown, tickets: ReadonlyMap<string, string>): string {
  const { client, ticket } = (typeof id === 'object' && id !== null ? id : {}) as { client?: unknown; ticket?: unknown };
  if (typeof client !== 'string' || typeof ticket !== 'string' || client.length > MAX_NAME_LENGTH || ticket.length > MAX_NAME_LENGTH) {
    throw new InvalidArgumentError('a client identifies itself with { client, ticket }, two short strings');
  }
  const expected = tickets.get(client);
  if (expected === undefined || !sameSecret(expected, ticket)) throw new InvalidArgumentError(`no client '${client}' with that ticket`);
  return client;
}

/** `value` when it is an integer from `min` to `max`. */
export function checkInteger(what: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidArgumentError(`${what} must be an integer from ${min} to ${max}, got ${typeof value === 'number' ? value : typeof value}`);
  }
  return value;
}

/** `weights` as tensors, when they are float32 tensors of `shapes`, in order, with finite numbers only. */
export function checkWeights(weights: unknown, shapes: readonly (readonly number[])[]): TfNamespace.Tensor[] {
  if (!Array.isArray(weights) || weights.length !== shapes.length) {
    throw new InvalidArgumentError(`an update is ${shapes.length} tensors, got ${Array.isArray(weights) ? `${weights.length} values` : typeof weights}`);
  }
  weights.forEach((value: unknown, i) => {
    if (!(value instanceof tf.Tensor)) throw new InvalidArgumentError(`weight ${i} is not a tensor`);
    const w = value as TfNamespace.Tensor;
    const want = shapes[i]!;
    if (w.dtype !== 'float32' || w.shape.length !== want.length || w.shape.some((d, k) => d !== want[k])) {
      throw new InvalidArgumentError(`weight ${i} must be float32 [${want.join(', ')}], got ${w.dtype} [${w.shape.join(', ')}]`);
    }
    const finite = tf.tidy(() => tf.all(tf.isFinite(w)).dataSync()[0]);
    if (!finite) throw new InvalidArgumentError(`weight ${i} holds NaN or infinite numbers`);
  });
  return weights as TfNamespace.Tensor[];
}
