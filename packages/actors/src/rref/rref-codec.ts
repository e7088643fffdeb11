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
  write: (rref, context) => {
    const wire = (rref.host as RRefManager).write(rref, context);
    context?.sent?.push(rref);
    return wire;
  },
  read: (wire, context) => {
    const rref = managerOf(context).read(wire);
    // The call server waits for these to be usable, and releases them when the call settles.
    context?.received?.push(rref);
    return rref;
  },
});
