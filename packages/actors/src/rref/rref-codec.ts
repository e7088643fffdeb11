/**
 * RRefs in messages: a codec extension that turns an RRef into its wire form
 * (registering the fork it becomes) and back into a working RRef on the
 * receiver, through the RRef plugin of the worker in the message's codec
 * context.
 * @module
 */
import { registerExtension } from '@tensorbus/core';
import { pluginOf, type WireContext } from '../agent/host.js';
import { RREFS } from './rref-key.js';
import { RREF_EXTENSION_TYPE, type RRefWire } from './rref-protocol.js';
import { RRef } from './rref.js';

registerExtension<RRef<unknown>, RRefWire, WireContext>({
  type: RREF_EXTENSION_TYPE,
  Class: RRef,
  write: (rref, context) => {
    const wire = rref.manager.write(rref, context);
    context?.sent?.push(rref);
    return wire;
  },
  read: (wire, context) => {
    const rref = pluginOf(context?.host, RREFS, 'RRefs').read(wire);
    // The call server waits for these to be usable, and releases them when the call settles.
    context?.received?.push(rref);
    return rref;
  },
});
