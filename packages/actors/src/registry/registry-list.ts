/**
 * `tb.registry.list`: what a worker can run, asked over the wire. Every
 * worker has it (this module loads with `@tensorbus/actors`), so a tool that
 * is a member of the namespace (the XML-RPC gateway's `system.listMethods`)
 * can list a worker's functions and classes without knowing its code base.
 * TensorFlow.js ops are not listed: they are the same on every worker
 * (`tfOpNames()`), and each worker says only whether it serves them.
 * @module
 */
import { listRegistered, remoteFunction, type RegisteredSummary } from './functions.js';

/** What `tb.registry.list` answers. */
export interface RegistryListing {
  /** Registered functions and classes, protocol ones left out. */
  entries: RegisteredSummary[];
}

/** Lists the functions and classes registered on the worker that runs it. */
export const listRegistry = remoteFunction('tb.registry.list', (): RegistryListing => ({ entries: listRegistered() }));
