/**
 * The RRef protocol's messages, all on the workers' control subjects, all
 * acknowledged (request/reply), retried on silence, and idempotent, so a lost
 * message (a NATS reconnect drops buffered publishes) loses no reference and
 * leaks none. See docs/rref.md.
 *
 *   child  -> owner   { k: 'rref.fork',   rrefId, forkId, holder, parent }  -> { ok } | { error }
 *   child  -> parent  { k: 'rref.child',  rrefId, forkId }                  -> { ok }
 *   user   -> owner   { k: 'rref.delete', rrefId, forkId }                  -> { ok }
 *
 * Calls (on the call subjects, through the agent's registry):
 *   tb.rref.create(rrefId, forkId | null, spec)  runs the spec on the owner, keeps the value
 *   tb.rref.fetch(rrefId)                         a copy of the value            [to_here]
 *   tb.rref.call(rrefId, method, args)            runs a method of the value     [rpc_sync().m()]
 * @module
 */

/** Control message kinds. */
export const FORK = 'rref.fork';
export const CHILD_ACCEPT = 'rref.child';
export const DELETE = 'rref.delete';

/** Codec extension tag of an RRef. */
export const RREF_EXTENSION_TYPE = 16;

/** An RRef on the wire: which value, and the fork this copy stands for. */
export interface RRefWire {
  /** Owner worker name. */
  o: string;
  /** RRef id, unique in the namespace. */
  r: string;
  /** Fork id of this copy (null when it travels to its owner and needs no fork). */
  f: string | null;
  /** The worker that sent it (the parent of the fork). */
  p: string;
}

/** What to run on the owner to make the value. */
export type CreateSpec =
  | { fn: string; args: unknown[] }
  | { target: string; method: string; args: unknown[] };

/** Attempts of an acknowledged control message before giving up. */
export const CONTROL_ATTEMPTS = 8;
/** Wait for one acknowledgement, ms. */
export const CONTROL_TIMEOUT_MS = 2_000;
