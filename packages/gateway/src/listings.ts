/**
 * What each worker can run, as its `tb.registry.list` says, cached for a few
 * seconds per (gateway agent, worker): `system.listMethods` and
 * `system.methodHelp` read it, and a call tells a class (constructed with
 * `remote`, returning a handle) from a function with it.
 * @module
 */
import { TensorbusError } from '@tensorbus/core';
import type { RpcAgent } from '@tensorbus/actors/internal';
import { listRegistry, type RegistryListing } from '@tensorbus/actors/internal';
import type { RegisteredSummary } from '@tensorbus/actors/internal';

/** Entries kept at most (each is one worker seen through one identity). */
const MAX_CACHED = 1024;
/** Most entries read from one worker's listing. */
const MAX_ENTRIES = 10_000;
const NAME = /^[A-Za-z0-9_.:/-]{1,256}$/;

/** A listing as the gateway keeps it, checked: a worker's answer is input like any other. */
export interface Listing {
  entries: Map<string, RegisteredSummary>;
}

/** Listings by agent and worker. */
export class Listings {
  private readonly cache = new Map<string, { at: number; listing: Promise<Listing> }>();

  constructor(private readonly ttlMs = 5_000) {}

  /** The listing of `worker` seen through `agent` (fresh within the TTL, or asked now). */
  of(agent: RpcAgent, worker: string, timeoutMs: number, fresh = false): Promise<Listing> {
    const key = `${agent.self.name}\0${worker}`;
    const cached = this.cache.get(key);
    if (cached && !fresh && Date.now() - cached.at < this.ttlMs) return cached.listing;
    const listing = agent.rpcSync(worker, listRegistry, [], { timeoutMs }).then(checked, (error: unknown) => {
      // A worker built without tb.registry.list: nothing listed, every name called as a function.
      if (error instanceof TensorbusError && error.code === 'UNKNOWN_FUNCTION') return { entries: new Map() };
      this.cache.delete(key);
      throw error;
    });
    this.cache.delete(key);
    if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(key, { at: Date.now(), listing });
    return listing;
  }
}

function checked(raw: unknown): Listing {
  const entries = new Map<string, RegisteredSummary>();
  const listing = raw as Partial<RegistryListing> | null;
  const list = Array.isArray(listing?.entries) ? listing.entries.slice(0, MAX_ENTRIES) : [];
  for (const e of list as unknown[]) {
    const entry = e as Partial<RegisteredSummary> | null;
    if (typeof entry?.name !== 'string' || !NAME.test(entry.name) || (entry.kind !== 'function' && entry.kind !== 'class')) continue;
    const summary: RegisteredSummary = { name: entry.name, kind: entry.kind, arity: typeof entry.arity === 'number' ? entry.arity : 0 };
    if (typeof entry.doc === 'string') summary.doc = entry.doc.slice(0, 2000);
    entries.set(entry.name, summary);
  }
  return { entries };
}
