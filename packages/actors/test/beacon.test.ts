/**
 * The process's beacon (nats-transport beacon/): one thread for every NATS
 * agent of a process, one connection per connection configuration, gone with
 * the last agent; nothing of a worker after its goodbye; a transport whose
 * options cannot cross to a thread does without it. Over a real nats-server.
 */
import test from 'ava';
import { connect } from 'nats';
import { defaultCodec } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { beaconStats } from '@tensorbus/nats-transport/internal';
import { sharedNatsServer, startNatsServer } from '@tensorbus/nats-transport/testing';
import { initRpc, type RpcAgent } from '../src/index.js';
import type { Announcement } from '../src/membership/membership-protocol.js';
import { addNumbers } from './fixtures/functions.js';
import { eventually, stopAll } from './helpers.js';
import { hostOf } from '../src/internal.js';

let namespaces = 0;
const fresh = () => `beacon${process.pid}x${++namespaces}`;
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test.serial('beacon - one thread serves every NATS agent of the process, with one connection per server, and ends with the last agent', async (t) => {
  const shared = await sharedNatsServer();
  const other = await startNatsServer();
  t.teardown(() => other.stop());
  const before = beaconStats();
  t.false(before.running, 'no agent, no thread');
  const ns1 = fresh();
  const ns2 = fresh();
  const agents: RpcAgent[] = [];
  t.teardown(() => stopAll(agents));
  // Two namespaces on one server share a connection; another server has its own.
  for (const [name, servers, namespace] of [['a', shared.url, ns1], ['b', shared.url, ns1], ['c', shared.url, ns2], ['d', other.url, ns1]] as const) {
    agents.push(await initRpc({ name, transport: natsTransport({ servers, namespace }), heartbeatMs: 100, failureTimeoutMs: 1_500 }));
  }
  t.like(beaconStats(), { running: true, slots: 4, connections: 2, threadsStarted: before.threadsStarted + 1 });
  await agents[0]!.shutdown({ graceful: false });
  t.like(beaconStats(), { running: true, slots: 3 });
  await stopAll(agents);
  t.like(beaconStats(), { running: false, slots: 0, connections: 0 });
});

test.serial('beacon - nothing of a worker is heard after its goodbye: its beacon stops first', async (t) => {
  const server = await sharedNatsServer();
  const namespace = fresh();
  const nc = await connect({ servers: server.url });
  t.teardown(() => nc.close());
  const heard: Announcement[] = [];
  nc.subscribe(`${namespace}.tb.members`, { callback: (_err, msg) => heard.push(defaultCodec.decode(msg.data) as Announcement) });
  await nc.flush();
  // Beats every 20 ms from both threads: a beat that followed the bye would show.
  const [a, b] = await Promise.all(['a', 'b'].map((name) => initRpc({ name, transport: natsTransport({ servers: server.url, namespace }), heartbeatMs: 20, failureTimeoutMs: 2_000 })));
  t.teardown(() => stopAll([a!, b!]));
  await settle(300);
  await b!.shutdown();
  await settle(300);
  const fromB = heard.filter((m) => m.n === 'b');
  const bye = fromB.findIndex((m) => m.k === 'bye');
  t.true(bye > 0, 'b said bye');
  t.true(fromB.filter((m) => m.k === 'hb').length > 10, 'b beat before');
  // The beats come from the beacon thread's own connection and the bye from the main one: NATS orders each
  // publisher's messages, not the two together, so a beat made just before the bye may still land after it.
  // What receivers go by is the number: nothing after the bye is numbered after it, so none is taken as live.
  t.deepEqual(fromB.slice(bye + 1).filter((m) => m.q > fromB[bye]!.q), [], 'nothing heard after the bye is numbered after it');
  t.true(fromB.every((m) => m.q <= fromB[bye]!.q), 'the bye has the greatest number');
  t.is(hostOf(a!).members.departure('b'), 'left');
});

test.serial('beacon - a NATS transport whose options cannot cross to a thread runs without one; its worker beats from its main thread', async (t) => {
  const server = await sharedNatsServer();
  const namespace = fresh();
  const { slots, threadsStarted: threads } = beaconStats();
  // a turns its beacon off; b's pass-through options hold a function, which cannot be handed to a thread.
  const a = await initRpc({ name: 'a', transport: natsTransport({ servers: server.url, namespace, beacon: false }), heartbeatMs: 100, failureTimeoutMs: 600 });
  const b = await initRpc({ name: 'b', transport: natsTransport({ servers: server.url, namespace, connectionOptions: { reconnectDelayHandler: () => 250 } }), heartbeatMs: 100, failureTimeoutMs: 600 });
  t.teardown(() => stopAll([a, b]));
  t.is(beaconStats().slots, slots, 'neither started a beacon');
  t.is(beaconStats().threadsStarted, threads, 'nor a thread');
  await eventually(() => a.workers().length === 2 && b.workers().length === 2);
  await settle(1_200);
  t.is(await a.rpcSync('b', addNumbers, [2, 3]), 5, 'b is still a member, twice its failure timeout later');
  t.is(hostOf(a).members.departure('b'), undefined);
});
