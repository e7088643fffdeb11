/**
 * `tensorbus status`: lists the workers of a namespace by asking them.
 * @module
 */
import { defaultCodec } from '@tensorbus/core';
import { loadNatsTransport } from '../nats-loader.js';
import { MEMBERS_SUBJECT } from '../agent/subjects.js';
import type { StatusArgs } from './args.js';

/** A worker as `status` lists it. */
export interface WorkerStatus {
  name: string;
  id: number;
}

/** Asks every worker of the namespace to answer within `waitMs`. */
export async function listWorkers(args: StatusArgs): Promise<WorkerStatus[]> {
  if (!args.server) throw new Error('no server: pass --server nats://host:port or set NATS_URL');
  const { natsTransport } = await loadNatsTransport('`tensorbus status` talks to NATS', 'where @tensorbus/actors is installed');
  const transport = await natsTransport({ servers: args.server.split(','), namespace: args.namespace, name: 'tensorbus-status' });
  const found = new Map<string, WorkerStatus>();
  const inbox = `tb.status.${process.pid}.${Date.now()}`;
  const subscription = transport.subscribe(inbox, (message) => {
    try {
      const here = defaultCodec.decode(message.data) as { n?: unknown; id?: unknown };
      if (typeof here.n === 'string' && typeof here.id === 'number') found.set(here.n, { name: here.n, id: here.id });
    } catch {
      // Not an answer: ignore.
    }
  });
  await transport.flush();
  transport.publish(MEMBERS_SUBJECT, defaultCodec.encode({ k: 'query', reply: inbox }));
  await new Promise((resolve) => setTimeout(resolve, args.waitMs));
  subscription.unsubscribe();
  await transport.close();
  return [...found.values()].sort((a, b) => a.id - b.id || (a.name < b.name ? -1 : 1));
}

/** Prints the workers as a table; returns the exit code. */
export async function status(args: StatusArgs): Promise<number> {
  const workers = await listWorkers(args);
  const ns = args.namespace ?? '(default)';
  if (workers.length === 0) {
    process.stdout.write(`no workers in namespace ${ns} on ${args.server}\n`);
    return 0;
  }
  process.stdout.write(`${workers.length} worker(s) in namespace ${ns} on ${args.server}\n`);
  process.stdout.write(`${'id'.padStart(4)}  name\n`);
  for (const w of workers) process.stdout.write(`${String(w.id).padStart(4)}  ${w.name}\n`);
  return 0;
}
