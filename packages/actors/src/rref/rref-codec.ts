/**
 * RRefs in messages: a codec extension that turns an RRef into its wire form
 * (registering the fork it becomes) and back into a working RRef on the
 * receiver, through the RRef manager of the agent named in the message's
 * codec context.
 * @module
 */
import { registerExtension, RRefError } from '@tensorbus/core';
import type { WireContext } from '../agent/call-client.js';
import type { RRefManager } from './rref-manager.js';
import { RREF_EXTENSION_TYPE, type RRefWire } from './rref-protocol.js';
import { RRef } from './rref.js';

function managerOf(context: WireContext | undefined): RRefManager {
  const rrefs = (context?.agent as { rrefs?: RRefManager } | undefined)?.rrefs;
  if (!rrefs) throw new RRefError('RREF_OWNER_LOST', 'RRefs travel only in messages of an RPC agent');
  return rrefs;
}

registerExtension<RRef<unknown>, RRefWire, WireContext>({
  type: RREF_EXTENSION_TYPE,
  Class: RRef,
  write: (rref, context) => (rref.host as RRefManager).write(rref, context),
  read: (wire, context) => managerOf(context).read(wire),
});
