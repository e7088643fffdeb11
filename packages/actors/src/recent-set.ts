/**
 * Bounded memory of recent keys: tombstones of released RRefs and autograd
 * contexts, deletes owed to a stalled owner. Past its bound the oldest key
 * goes first, so a peer that makes keys without end costs a fixed amount.
 * @module
 */

/** How many released ids a worker remembers, so that a late message cannot bring one back. */
export const TOMBSTONES = 10_000;

/** A set that keeps at most `limit` keys, dropping the oldest first. */
export class RecentSet<K> {
  private readonly keys = new Set<K>();

  constructor(private readonly limit: number) {}

  /** Adds `key` (as the newest); drops the oldest past the limit. */
  add(key: K): void {
    this.keys.add(key);
    if (this.keys.size > this.limit) this.keys.delete(this.keys.values().next().value as K);
  }

  has(key: K): boolean {
    return this.keys.has(key);
  }

  get size(): number {
    return this.keys.size;
  }

  /** The keys, oldest first. */
  [Symbol.iterator](): IterableIterator<K> {
    return this.keys.values();
  }
}
