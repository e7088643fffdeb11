/**
 * The RRef plugin: remote references with PyTorch's reference counting
 * (rref-manager.ts, docs/rref.md). Its owner-side functions are registered
 * by rref-functions.ts and its codec extension by rref-codec.ts as this
 * module loads them.
 * @module
 */
import type { ProtocolPlugin } from '../agent/host.js';
import './rref-codec.js';
import './rref-functions.js';
import { RREFS } from './rref-key.js';
import { RRefManager } from './rref-manager.js';
import { RREF_CONTROL_KINDS, RREF_FUNCTIONS } from './rref-protocol.js';

export { RREFS } from './rref-key.js';

/** RRefs: `remote()`, `agent.rref()`, forks, deletes, and RRefs in messages. */
export const rrefPlugin: ProtocolPlugin<RRefManager> = {
  key: RREFS,
  kinds: RREF_CONTROL_KINDS,
  functions: RREF_FUNCTIONS,
  install: (host) => new RRefManager(host),
};
