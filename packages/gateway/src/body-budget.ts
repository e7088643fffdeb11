/**
 * The bytes of request bodies the gateway buffers at once, in all and per
 * client address. In-flight slots are taken once a body is read, so without
 * this only connections would bound the bodies held (64 × 8 MiB from one
 * address, 512 × 8 MiB in all). A body holds its bytes from when they are
 * declared (`Content-Length`) or arrive (chunked) until it is parsed or its
 * connection ends; one past either budget is refused with HTTP 503 and
 * `Retry-After`.
 * @module
 */
import { GatewayError } from './errors.js';

/** Seconds a client refused for want of body budget is told to wait (`Retry-After`). */
export const BODY_RETRY_AFTER_S = 1;

/** A body would pass the gateway's budget of body bytes in flight; answered with HTTP 503 and `Retry-After`. */
export class BodiesBusyError extends GatewayError {
  constructor(message: string) {
    super('GATEWAY_LIMIT_EXCEEDED', message);
  }
}

/** What one request's body holds of the budget. */
export interface BodyHold {
  /** Holds `bytes` more; throws {@link BodiesBusyError} (holding nothing more) past a budget. */
  grow(bytes: number): void;
  /** Gives back all it holds; once, however often it is called. */
  release(): void;
}

/** The budget of body bytes in flight, in all and per client address. */
export class BodyBudget {
  private total = 0;
  private readonly byAddress = new Map<string, number>();

  constructor(
    private readonly maxBytes: number,
    private readonly maxBytesPerAddress: number,
  ) {}

  /** Bytes held now, in all. */
  get held(): number {
    return this.total;
  }

  /** A hold, empty so far, for a body from `address`. */
  hold(address: string): BodyHold {
    let mine = 0;
    return {
      grow: (bytes) => {
        const fromAddress = this.byAddress.get(address) ?? 0;
        if (fromAddress + bytes > this.maxBytesPerAddress) {
          throw new BodiesBusyError(`the bodies this address is sending would pass ${this.maxBytesPerAddress} bytes: retry once some are answered`);
        }
        if (this.total + bytes > this.maxBytes) throw new BodiesBusyError(`the gateway is reading ${this.maxBytes} bytes of bodies already: retry shortly`);
        mine += bytes;
        this.total += bytes;
        this.byAddress.set(address, fromAddress + bytes);
      },
      release: () => {
        if (mine === 0) return;
        this.total -= mine;
        const left = (this.byAddress.get(address) ?? mine) - mine;
        if (left > 0) this.byAddress.set(address, left);
        else this.byAddress.delete(address);
        mine = 0;
      },
    };
  }
}
