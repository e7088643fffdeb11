/**
 * Helpers for the tests of tensorbus packages that run agents
 * (`@tensorbus/actors/testing`): fresh groups over a transport kind, polling
 * until a condition holds, stopping agents, and a rogue bus client that
 * answers status queries with made-up workers and figures. Not for
 * production code: nothing here is part of the agent's API.
 *
 * @example
 * ```ts
 * // transportKinds: @tensorbus/nats-transport/testing; the rest: @tensorbus/actors/testing.
 * for (const kind of transportKinds()) {
 *   test(`${kind.name} - two agents see each other`, async (t) => {
 *     const group = newGroup(kind);
 *     const agents = await Promise.all(['a', 'b'].map((name) => initRpc({ name, transport: group.transport() })));
 *     await eventually(() => agents.every((agent) => agent.workers().length === 2));
 *     await stopAll(agents);
 *   });
 * }
 * ```
 * @module
 */
import { defaultCodec, type Transport } from '@tensorbus/core';
import type { RpcAgent } from '../agent/rpc-agent.js';
import { Identity } from '../agent/identity.js';
import { controlSubject, MEMBERS_SUBJECT } from '../agent/subjects.js';
import { signedText } from '../membership/heartbeat-beat.js';
import { HERE, QUERY } from '../membership/membership-protocol.js';
import { nonceOf, statsSignedText, type WorkerStats } from '../observe/stats-protocol.js';
import { decodeWithoutTensors } from '../tensors.js';

/** A way to make transports (a `TransportKind` of `@tensorbus/nats-transport/testing`). */
export interface TransportMaker {
  create(options: { namespace: string }): Promise<Transport>;
}

let groups = 0;

/** A fresh namespace on `kind`: agents made with it see each other and nobody else. */
export function newGroup(kind: TransportMaker): { transport: () => Promise<Transport>; namespace: string } {
  const namespace = `g${process.pid}x${++groups}`;
  return { namespace, transport: () => kind.create({ namespace }) };
}

/** Shuts every agent down without waiting. */
export async function stopAll(agents: RpcAgent[]): Promise<void> {
  await Promise.all(agents.map((a) => a.shutdown({ graceful: false }).catch(() => undefined)));
}

/** Resolves once `predicate` holds, polling every 10 ms; rejects after `timeoutMs`. */
export async function eventually(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// ---- a rogue bus client -----------------------------------------------------
// A bus client that is not a member and answers the queries a reader makes
// (`tensorbus status`, the dashboard) as well as it can: a signed `here` for a
// made-up worker and for a real one (with its own key), and stats answers,
// signed with its own key for the asker's nonce, with made-up figures
// (`reported.loss` = ROGUE_LOSS) for both. It never announces on the members
// subject (that is what makes a member).

/** The made-up figure every rogue answer carries. */
export const ROGUE_LOSS = 999;

/** Made-up stats of `name`: a busy worker, up for an hour. */
function madeUp(name: string, id: number): WorkerStats {
  return {
    v: 1, name, id, host: 'rogue', pid: 4242, startedAt: Date.now() - 3_600_000, uptimeS: 3600, backend: 'wasm', transport: 'nats', routes: {}, members: [name],
    window: 60, served: [{ fn: 'train', total: 1e6, buckets: [] }], made: [], errors: {}, inFlight: 7, rrefs: { owned: 1, used: 1 },
    contexts: 0, tensors: 1, tensorBytes: 4, wasmHeapBytes: 0, rssBytes: 1, heapUsedBytes: 1, events: [], reported: { loss: ROGUE_LOSS },
  };
}

/** Answers as `names` (name -> id) on `transport`; returns a function that stops it. */
export function startRogue(transport: Transport, names: Record<string, number>): () => void {
  const identity = new Identity();
  const inst = '00000000-0000-4000-8000-000000000000';
  let q = 0;
  const here = (n: string, id: number) => {
    const m = { k: HERE, n, id, inst, t: Date.now(), q: ++q, sk: identity.signKey, xk: identity.dhKey } as Record<string, unknown>;
    m.sig = identity.sign(signedText(m as never));
    return m;
  };
  const subscriptions = [
    transport.subscribe(MEMBERS_SUBJECT, (message) => {
      const query = decodeWithoutTensors(message.data) as { k?: unknown; reply?: unknown };
      if (query?.k !== QUERY || typeof query.reply !== 'string') return;
      for (const [n, id] of Object.entries(names)) transport.publish(query.reply, defaultCodec.encode(here(n, id)));
    }),
    ...Object.entries(names).map(([n, id]) =>
      transport.subscribe(controlSubject(n), (message) => {
        const wrapped = decodeWithoutTensors(message.data) as { k?: unknown } | unknown[];
        // Agents wrap control messages in an envelope; readers send them bare.
        const query = (Array.isArray(wrapped) ? decodeWithoutTensors(wrapped[1] as Uint8Array) : wrapped) as { k?: unknown; n?: unknown };
        if (query?.k !== 'stats') return;
        const nonce = nonceOf(query as Record<string, unknown>);
        const s = defaultCodec.encode(madeUp(n, id));
        // A reader that sends no nonce takes a bare snapshot (the query before answers were signed).
        message.respond(nonce ? defaultCodec.encode({ s, sig: identity.sign(statsSignedText(nonce, s)) }) : s);
      }),
    ),
  ];
  return () => subscriptions.forEach((s) => s.unsubscribe());
}
