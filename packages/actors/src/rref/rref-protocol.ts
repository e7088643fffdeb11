/**
 * The RRef protocol's messages, all on the workers' control subjects, all
 * acknowledged (request/reply), retried on silence, and idempotent, so a lost
 * message (a NATS reconnect drops buffered publishes) loses no reference and
 * leaks none. See docs/rref.md.
 *
 *   parent -> owner   { k: 'rref.forked', rrefId, forkId, parentFork, holder } -> { ok } | { error }
 *   child  -> owner   { k: 'rref.fork',   rrefId, forkId, holder, parent }  -> { ok } | { error }
 *   child  -> parent  { k: 'rref.child',  rrefId, forkId }                  -> { ok }
 *   user   -> owner   { k: 'rref.delete', rrefId, forkId }                  -> { ok }
 *
 * Calls (on the call subjects, through the agent's registry):
 *   tb.rref.create(rrefId, forkId | null, spec)  runs the spec on the owner, keeps the value
 *   tb.rref.fetch(rrefId)                         a copy of the value            [to_here]
 *   tb.rref.call(rrefId, method, args)            runs a method of the value     [rpc_sync().m()]
 *   tb.rref.backward(rrefId, contextId, retain)   a backward pass from the value [RRef.backward]
 * @module
 */

/** Control kind: a user tells the owner it forked its fork on to another worker (before that worker confirms it). */
export const FORKED = 'rref.forked';
/** Control kind: a holder announces its fork to the owner. */
export const FORK = 'rref.fork';
/** Control kind: the owner confirmed a child fork (to its parent). */
export const CHILD_ACCEPT = 'rref.child';
/** Control kind: a user fork is gone. */
export const DELETE = 'rref.delete';
/** The control kinds the RRef plugin declares. */
export const RREF_CONTROL_KINDS = [FORKED, FORK, CHILD_ACCEPT, DELETE] as const;

/** Owner-side function: make the value [remote()]. */
export const CREATE_FN = 'tb.rref.create';
/** Owner-side function: a copy of the value [to_here()]. */
export const FETCH_FN = 'tb.rref.fetch';
/** Owner-side function: run a method of the value. */
export const CALL_FN = 'tb.rref.call';
/** Owner-side function: a backward pass from the value. */
export const BACKWARD_FN = 'tb.rref.backward';
/** The remote functions the RRef plugin declares. */
export const RREF_FUNCTIONS = [CREATE_FN, FETCH_FN, CALL_FN, BACKWARD_FN] as const;

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
  | {
      fn: string;
      args: unknown[];
      /** A supervised object (supervised.ts): its owner saves its checkpoint after each method call, if its class says how. */
      supervised?: boolean;
      /** The restart this creation makes it again for (1, 2, …): it restores its last checkpoint, if its class says how. */
      restart?: number;
    }
  | { target: string; method: string; args: unknown[] };

/** Attempts of an acknowledged control message before giving up. */
export const CONTROL_ATTEMPTS = 8;
/** Wait for one acknowledgement, ms. */
export const CONTROL_TIMEOUT_MS = 2_000;

/** A supervised object's restart state, kept by its creator on the RRef's user state. */
export interface Supervision {
  /** What made the object, sent again to each new incarnation of its owner. */
  readonly spec: CreateSpec & { fn: string };
  readonly maxRestarts: number;
  /** Restarts used so far. */
  restarts: number;
  /** Bumped each time the object is lost; a call remembers it to wait for the next one. */
  generation: number;
  /** Waiting for the owner's new incarnation (set at the loss, cleared once re-created). */
  back: { promise: Promise<void>; resolve(): void } | undefined;
  /** Told when the object was made again or lost for good (calls waiting to retry). */
  readonly waiters: Set<() => void>;
}
