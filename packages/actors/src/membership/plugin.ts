/**
 * The membership plugin: who is in the group (see membership.ts). Installed
 * first by every agent: its view is the host's `members`.
 * @module
 */
import { PluginKey, type ProtocolPlugin } from '../agent/host.js';
import { Membership } from './membership.js';
import { MEMBERSHIP_CONTROL_KINDS } from './membership-protocol.js';

/** The key of a worker's {@link Membership}. */
export const MEMBERSHIP = new PluginKey<Membership>('membership');

/** Membership: join, ids, heartbeats, failure detection, leave. */
export const membershipPlugin: ProtocolPlugin<Membership> = {
  key: MEMBERSHIP,
  kinds: MEMBERSHIP_CONTROL_KINDS,
  functions: [],
  install: (host) => new Membership(host),
};
