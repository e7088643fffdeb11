/**
 * The distributed autograd plugin [torch.distributed.autograd]: contexts
 * carried by calls, the backward pass across workers, release everywhere
 * (dist-autograd.ts, docs/dist-autograd.md). Its protocol functions are
 * registered by autograd-functions.ts as this module loads it.
 * @module
 */
import type { ProtocolPlugin } from '../agent/host.js';
import './autograd-functions.js';
import { AUTOGRAD } from './autograd-key.js';
import { DistAutograd } from './dist-autograd.js';
import { AUTOGRAD_FUNCTIONS } from './protocol.js';

export { AUTOGRAD } from './autograd-key.js';

/** Distributed autograd. */
export const autogradPlugin: ProtocolPlugin<DistAutograd> = {
  key: AUTOGRAD,
  kinds: [],
  functions: AUTOGRAD_FUNCTIONS,
  install: (host) => new DistAutograd(host),
};
