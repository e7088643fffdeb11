/**
 * The RRef protocol's messages, all on the workers' control subjects, all
 * acknowledged (request/reply), retried on silence, and idempotent, so a lost
 * message (a NATS reconnect drops buffered publishes) loses no reference and
 * leaks none. They are one union, {@link RRefMessage}, read from the wire by
 * one function, {@link readRRefMessage}, and handled by one dispatch (the RRef
 * manager's). See docs/rref.md.
 *
 *   parent -> owner   { k: 'rref.forked', rrefId, forkId, parentFork, holder } -> { ok } | { error }
 *   child  -> owner   { k: 'rref.fork',   rrefId, forkId, holder, parent }  -> { ok } | { error }
 *   child  -> parent  { k: 'rref.child',  rrefId, forkId }                  -> { ok }
 *   user   -> owner   { k: 'rref.delete', forks: [[rrefId, forkId], ...] }  -> { ok }
 *   a malformed message of any kind                                          -> { ok: false, error: SERIALIZATION }
 *
 * Calls (on the call subjects, through the agent's registry):
 *   tb.rref.create(rrefId, forkId | null, spec)  runs the spec on the owner, keeps the value
 *   tb.rref.fetch(rrefId)                         a copy of the value            [to_here]
 *   tb.rref.call(rrefId, method, args)            runs a method of the value     [rpc_sync().m()]
 *   tb.rref.backward(rrefId, contextId, retain)   a backward pass from the value [RRef.backward]
 * @module
 */
import { RRefError, SerializationError } from '@tensorbus/core';
import { isWireId } from '../peer-limits.js';

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

/** Forks in one delete message, at most (the owner refuses longer lists). */
export const DELETE_BATCH_MAX = 256;

/** One fork: `[rrefId, forkId]`. */
export type ForkKey = readonly [rrefId: string, forkId: string];

/** `rref.forked`: the sender forked its fork `parentFork` on to `holder` as `forkId`. */
export type ForkedMessage = { k: typeof FORKED; rrefId: string; forkId: string; parentFork: string; holder: string };
/** `rref.fork`: the sender holds fork `forkId` (it got it from `parent`). */
export type ForkMessage = { k: typeof FORK; rrefId: string; forkId: string; holder: string; parent: string };
/** `rref.child`: the owner confirmed the sender's fork `forkId`, a child of the receiver's. */
export type ChildAcceptMessage = { k: typeof CHILD_ACCEPT; rrefId: string; forkId: string };
/** `rref.delete`: the sender let go of these forks. */
export type DeleteMessage = { k: typeof DELETE; forks: ForkKey[] };
/** Every control message of the RRef protocol. */
export type RRefMessage = ForkedMessage | ForkMessage | ChildAcceptMessage | DeleteMessage;

/**
 * The one check of an RRef control message from the wire: its kind is one of
 * the protocol's and every field its kind has is of its shape (ids: non-empty
 * strings of bounded length, `isWireId`; a delete list: at most
 * DELETE_BATCH_MAX entries). Returns the typed message, or a
 * SerializationError saying what is wrong. A delete's malformed entries are
 * left out, its well-formed ones kept (one bad entry does not cost the
 * others); fields beyond the kind's (a traceparent `tc`) are not copied.
 */
export function readRRefMessage(raw: unknown): RRefMessage | SerializationError {
  const m = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const malformed = (what: string) => new SerializationError(`malformed RRef message ${describeKind(m.k)}: ${what}`);
  const ids = <F extends string>(fields: readonly F[]): Record<F, string> | SerializationError => {
    for (const field of fields) if (!isWireId(m[field])) return malformed(field);
    return m as Record<F, string>;
  };
  switch (m.k) {
    case FORKED: {
      const f = ids(['rrefId', 'forkId', 'parentFork', 'holder'] as const);
      return f instanceof Error ? f : { k: FORKED, rrefId: f.rrefId, forkId: f.forkId, parentFork: f.parentFork, holder: f.holder };
    }
    case FORK: {
      const f = ids(['rrefId', 'forkId', 'holder', 'parent'] as const);
      return f instanceof Error ? f : { k: FORK, rrefId: f.rrefId, forkId: f.forkId, holder: f.holder, parent: f.parent };
    }
    case CHILD_ACCEPT: {
      const f = ids(['rrefId', 'forkId'] as const);
      return f instanceof Error ? f : { k: CHILD_ACCEPT, rrefId: f.rrefId, forkId: f.forkId };
    }
    case DELETE: {
      const { forks } = m;
      if (!Array.isArray(forks) || forks.length > DELETE_BATCH_MAX) return malformed(`forks (a list of at most ${DELETE_BATCH_MAX} [rrefId, forkId])`);
      const kept: ForkKey[] = [];
      for (const fork of forks as unknown[]) {
        const [rrefId, forkId] = Array.isArray(fork) ? (fork as unknown[]) : [];
        if (isWireId(rrefId) && isWireId(forkId)) kept.push([rrefId, forkId]);
      }
      return { k: DELETE, forks: kept };
    }
    default:
      return malformed('not a kind of the RRef protocol');
  }
}

/** A message's kind, fit for an error message. */
function describeKind(kind: unknown): string {
  return typeof kind === 'string' ? `'${kind.slice(0, 64)}'` : '(no kind)';
}

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

/** Highest restart number a creation request may carry (supervised.ts allows 1,000 restarts). */
const MAX_RESTART = 1_000;

/** Checks a creation request's spec from the wire; throws RRefError (RREF_CREATION_FAILED) when malformed. */
export function checkCreateSpec(spec: unknown): asserts spec is CreateSpec {
  const s = spec as Partial<{ fn: unknown; target: unknown; method: unknown; args: unknown }> | null;
  const ok = s !== null && typeof s === 'object' && Array.isArray(s.args) && (typeof s.fn === 'string' || (typeof s.target === 'string' && typeof s.method === 'string'));
  const { supervised, restart } = (s ?? {}) as Partial<{ supervised: unknown; restart: unknown }>;
  if (supervised !== undefined && typeof supervised !== 'boolean') throw new RRefError('RREF_CREATION_FAILED', 'malformed RRef creation request: supervised');
  if (restart !== undefined && !(Number.isInteger(restart) && (restart as number) >= 0 && (restart as number) <= MAX_RESTART)) {
    throw new RRefError('RREF_CREATION_FAILED', 'malformed RRef creation request: restart');
  }
  if (!ok) throw new RRefError('RREF_CREATION_FAILED', 'malformed RRef creation request');
}

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
