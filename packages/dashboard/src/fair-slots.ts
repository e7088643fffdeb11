/**
 * Slots shared fairly between client addresses: the dashboard's connections
 * and its server-sent-event listeners. A newcomer is always let in; room is
 * made by evicting the oldest holder of its own address when that address
 * holds its share already, else the oldest holder of the address that holds
 * the most. So no address can lock out another (it can only evict its own),
 * and even one that holds every slot loses the oldest to the next arrival
 * instead of refusing it for good.
 * @module
 */

/** Holders per address (oldest first) under a bound in all and per address. */
export class FairSlots<T> {
  private readonly byAddress = new Map<string, Set<T>>();
  private count = 0;

  /**
   * @param total holders in all at most.
   * @param perAddress holders of one address at most.
   * @param evict ends a holder pushed out (it must call {@link release} itself, or be released by the caller).
   */
  constructor(readonly total: number, readonly perAddress: number, private readonly evict: (holder: T) => void) {}

  /** Holders now. */
  get size(): number {
    return this.count;
  }

  /** Holders of `address` now. */
  heldBy(address: string): number {
    return this.byAddress.get(address)?.size ?? 0;
  }

  /** Every holder, oldest first per address. */
  *[Symbol.iterator](): IterableIterator<T> {
    for (const holders of this.byAddress.values()) yield* holders;
  }

  /** Admits `holder` for `address`, evicting one holder first when a bound is reached. */
  admit(address: string, holder: T): void {
    if (this.heldBy(address) >= this.perAddress) this.evictOldest(address);
    else if (this.count >= this.total) this.evictOldest(this.busiest());
    let holders = this.byAddress.get(address);
    if (holders === undefined) this.byAddress.set(address, (holders = new Set()));
    holders.add(holder);
    this.count++;
  }

  /** Forgets `holder` (it closed); a holder not held is ignored. */
  release(address: string, holder: T): void {
    const holders = this.byAddress.get(address);
    if (holders === undefined || !holders.delete(holder)) return;
    this.count--;
    if (holders.size === 0) this.byAddress.delete(address);
  }

  /** The address holding the most (the first of those, on a tie). */
  private busiest(): string {
    let most = '';
    for (const [address, holders] of this.byAddress) if (holders.size > this.heldBy(most)) most = address;
    return most;
  }

  private evictOldest(address: string): void {
    const oldest = this.byAddress.get(address)?.values().next().value;
    if (oldest === undefined) return;
    this.release(address, oldest);
    this.evict(oldest);
  }
}
