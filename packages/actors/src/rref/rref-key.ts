/**
 * The key the RRef plugin is found under (`host.plugin(RREFS)`), apart from
 * the plugin so that protocol functions and the codec reach the manager
 * without importing what imports them.
 * @module
 */
import { PluginKey } from '../agent/host.js';
import type { RRefManager } from './rref-manager.js';

/** The key of a worker's {@link RRefManager}. */
export const RREFS = new PluginKey<RRefManager>('rrefs');
