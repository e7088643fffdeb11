/**
 * The key the autograd plugin is found under (`host.plugin(AUTOGRAD)`), apart
 * from the plugin so that protocol functions reach it without importing what
 * imports them.
 * @module
 */
import { PluginKey } from '../agent/host.js';
import type { DistAutograd } from './dist-autograd.js';

/** The key of a worker's {@link DistAutograd}. */
export const AUTOGRAD = new PluginKey<DistAutograd>('autograd');
