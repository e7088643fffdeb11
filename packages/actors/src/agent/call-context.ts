/**
 * Who sent a call and what travels with it. The call being served is in
 * `callScope` (host.ts).
 * @module
 */

/** Who sent a call: the name it claims and whether it showed it (see CallScope.verified in host.ts). */
export interface CallerIdentity {
  name: string;
  verified: boolean;
  /** Where the transport vouches the call came from (`InboundMessage.origin`: another NATS account), if it does. */
  origin?: string;
}

/** Metadata travelling with each call; protocols add their own keys. */
export interface CallMeta {
  /** Caller's worker name (a claim: see CallScope.verified in host.ts). */
  from: string;
  /** The call's MAC, `[counter, mac]`, added by the agent as it sends (see call-auth.ts). */
  auth?: unknown;
  [key: string]: unknown;
}
