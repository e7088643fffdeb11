/**
 * The one place that chooses a request's route (route-choice.ts): the first
 * route that carries its subject takes it, the bus last; a route that did not
 * deliver it hands it to the next one, and a request settled meanwhile is not
 * sent again. Then the real routes beside the bus, shared memory and TCP, to
 * a real data port: what each carries and what shared memory hands to TCP.
 */
import test, { type ExecutionContext } from 'ava';
import { Frame, RpcTimeoutError } from '@tensorbus/core';
import type { HeldPayload } from '@tensorbus/core/internal';
import { DirectCaller, DirectRoute, DirectServer, LearntRoutes, reachableFromHere, SharedMemoryRoute, SharedSegments } from '@tensorbus/direct-routes/internal';
import type { ReplySinkFactory, Route, Undelivered } from '@tensorbus/direct-routes';
import { BusRoute } from '../src/bus-route.js';
import type { PendingRequest } from '../src/request/pending-request.js';
import { PendingRequests } from '../src/request/pending-requests.js';
import { RouteChoice } from '../src/route-choice.js';

/** What a fake direct route does with a request: answer it, or say it did not deliver it (later, as a socket would). */
type Behaviour = 'answer' | 'undelivered';

/** A direct route that carries the subjects it is given, records what it was sent, and behaves as told. */
function directRoute(subjects: string[], behaviour: Behaviour, medium: 'tcp' | 'shm' = 'tcp') {
  const sent: string[] = [];
  const route: Route<PendingRequest> = {
    carries: (subject) => subjects.includes(subject),
    medium: () => medium,
    send(request: PendingRequest, data: HeldPayload, replySink: ReplySinkFactory | undefined, undelivered: Undelivered<PendingRequest>) {
      sent.push(request.subject);
      setTimeout(() => (behaviour === 'answer' ? request.resolve(Frame.of(new Uint8Array([2]))) : undelivered(route, request, data, replySink)), 5);
    },
  };
  return { route, sent };
}

/** The bus, recording what it publishes and answering with [1] unless told to stay silent. */
function busRoute(answer = true) {
  const published: string[] = [];
  const route = new BusRoute((request, _data) => {
    published.push(request.subject);
    if (answer) setTimeout(() => request.resolve(Frame.of(new Uint8Array([1]))), 5);
  });
  return { route, published };
}

const table = new PendingRequests('_INBOX.choice');
const payload = Frame.of(new Uint8Array([9]));

test('route choice - a request goes on the first route that carries its subject, else on the bus; routeOf names the medium', async (t) => {
  const direct = directRoute(['ns.w1'], 'answer', 'shm');
  const bus = busRoute();
  const choice = new RouteChoice<PendingRequest>([direct.route, bus.route]);
  t.is(choice.choose('ns.w1'), direct.route);
  t.is(choice.choose('ns.w2'), bus.route);
  t.is(choice.mediumOf('ns.w1'), 'shm');
  t.is(choice.mediumOf('ns.w2'), 'nats');

  const toW1 = table.open({ subject: 'ns.w1', label: 'w1', timeoutMs: 1_000 });
  choice.send(toW1, payload, undefined);
  t.deepEqual([...(await toW1.promise).bytes], [2], 'answered on the direct route');
  const toW2 = table.open({ subject: 'ns.w2', label: 'w2', timeoutMs: 1_000 });
  choice.send(toW2, payload, undefined);
  t.deepEqual([...(await toW2.promise).bytes], [1], 'answered on the bus');
  t.deepEqual(direct.sent, ['ns.w1']);
  t.deepEqual(bus.published, ['ns.w2'], 'the bus saw only the request no other route carried');
});

test('route choice - a request a route did not deliver goes on the next route that carries it, the bus in the end, once', async (t) => {
  const first = directRoute(['ns.w1'], 'undelivered');
  const second = directRoute([], 'answer');
  const bus = busRoute();
  const choice = new RouteChoice<PendingRequest>([first.route, second.route, bus.route]);
  const request = table.open({ subject: 'ns.w1', label: 'w1', timeoutMs: 1_000 });
  choice.send(request, payload, undefined);
  t.deepEqual([...(await request.promise).bytes], [1], 'answered on the bus');
  t.deepEqual(first.sent, ['ns.w1']);
  t.deepEqual(second.sent, [], 'a route that does not carry the subject is passed over');
  t.deepEqual(bus.published, ['ns.w1'], 'sent on the bus once');
});

test('route choice - a request settled before its route said it did not deliver it is not sent again', async (t) => {
  const sent: string[] = [];
  let said: Promise<void> | undefined;
  // Says it did not deliver only once the request has settled (timed out) meanwhile, however late the timers run.
  const direct: Route<PendingRequest> = {
    carries: (subject) => subject === 'ns.w1',
    medium: () => 'tcp',
    send(request, data, replySink, undelivered) {
      sent.push(request.subject);
      said = request.promise.then(
        () => undefined,
        () => undelivered(direct, request, data, replySink),
      );
    },
  };
  const bus = busRoute();
  const choice = new RouteChoice<PendingRequest>([direct, bus.route]);
  const request = table.open({ subject: 'ns.w1', label: 'w1', timeoutMs: 1 });
  choice.send(request, payload, undefined);
  await t.throwsAsync(request.promise, { instanceOf: RpcTimeoutError });
  await said;
  t.deepEqual(sent, ['ns.w1']);
  t.deepEqual(bus.published, [], 'the timed-out request never went on the bus');
});

/** A route that records its name in `log` each time it is sent a request, and otherwise is `route`. */
function logged(route: Route<PendingRequest>, name: string, log: string[]): Route<PendingRequest> {
  const wrapper: Route<PendingRequest> = {
    carries: (subject) => route.carries(subject),
    medium: (subject) => route.medium(subject),
    send(request, data, replySink, undelivered) {
      log.push(name);
      route.send(request, data, replySink, (_from, ...rest) => undelivered(wrapper, ...rest));
    },
  };
  return wrapper;
}

/**
 * A data port serving `ns.w1` (answering [3]) without shared memory, so it
 * refuses every shared-memory request (NO SHM), and this process's side:
 * the route learnt from its header, segments (plain memory standing in for
 * memfds: the port refuses them before mapping), and the choice among shared
 * memory, TCP and a bus that answers [1], each logged.
 */
async function sameHostPort(t: ExecutionContext) {
  const server = await DirectServer.start({});
  const ran = { count: 0 };
  const served = server.route('ns.w1', (_data, respond) => {
    ran.count++;
    respond(Frame.of(new Uint8Array([3])));
  });
  let descriptors = 0;
  const segments = new SharedSegments({
    create: (size: number): [number, ArrayBuffer] => [++descriptors, new ArrayBuffer(size)],
    open: () => {
      throw new Error('not used');
    },
    close: () => undefined,
  });
  const caller = new DirectCaller();
  const learnt = new LearntRoutes(reachableFromHere);
  learnt.learn('ns.w1', served.header);
  t.teardown(() => {
    caller.close();
    server.close();
  });
  const log: string[] = [];
  const shm = logged(new SharedMemoryRoute(learnt, caller, segments), 'shm', log);
  const tcp = logged(new DirectRoute(learnt, caller), 'tcp', log);
  const bus = busRoute();
  const choice = new RouteChoice<PendingRequest>([shm, tcp, logged(bus.route, 'bus', log)]);
  /** A frame of `bytes` in one of this process's segments. */
  const inSegment = (bytes: number) => Frame.of(new Uint8Array(segments.allocate(bytes)!, 0, bytes).fill(7));
  /** Sends `data` to `ns.w1` through the choice: the reply's bytes and the routes it was sent on. */
  const send = async (data: Frame) => {
    log.length = 0;
    const request = table.open({ subject: 'ns.w1', label: 'w1', timeoutMs: 5_000 });
    choice.send(request, data, undefined);
    const reply = await request.promise;
    return { reply: [...reply.bytes], routes: [...log] };
  };
  return { choice, served, ran, segments, inSegment, send, shm, tcp };
}

test('route choice - shared memory carries a route of this host, first; a frame in no segment it hands to TCP, and it carries on', async (t) => {
  const { choice, ran, send, shm, tcp } = await sameHostPort(t);
  t.is(choice.choose('ns.w1'), shm, 'a route of this host: shared memory first');
  t.is(choice.mediumOf('ns.w1'), 'shm');
  t.is(choice.mediumOf('ns.w2'), 'nats', 'no route learnt: the bus');
  t.true(tcp.carries('ns.w1'), 'TCP carries it too, next');

  t.deepEqual(await send(Frame.of(new Uint8Array([9]))), { reply: [3], routes: ['shm', 'tcp'] }, 'a small frame (heap memory) handed to TCP, answered there');
  t.is(ran.count, 1);
  t.is(choice.mediumOf('ns.w1'), 'shm', 'still carried by shared memory: nothing was refused');
});

test('route choice - a request the responder refuses to map (NO SHM) goes to TCP unrun; from then on TCP carries that port', async (t) => {
  const { choice, ran, inSegment, send, tcp } = await sameHostPort(t);
  t.deepEqual(await send(inSegment(1 << 20)), { reply: [3], routes: ['shm', 'tcp'] }, 'refused in shared memory, answered over TCP');
  t.is(ran.count, 1, 'run once: the refused request never ran');
  t.is(choice.choose('ns.w1'), tcp, 'the port refused shared memory: TCP carries it now');
  t.is(choice.mediumOf('ns.w1'), 'tcp');
  t.deepEqual(await send(inSegment(1 << 20)), { reply: [3], routes: ['tcp'] }, 'later requests go straight to TCP');
  t.is(ran.count, 2);
});

test('route choice - a route its responder no longer serves (NO ROUTE) is forgotten: from shared memory straight to the bus, not TCP', async (t) => {
  const { choice, served, ran, inSegment, send } = await sameHostPort(t);
  served.remove();
  t.deepEqual(await send(inSegment(1 << 20)), { reply: [1], routes: ['shm', 'bus'] }, 'answered on the bus, never sent over TCP');
  t.is(ran.count, 0);
  t.is(choice.mediumOf('ns.w1'), 'nats', 'the route is forgotten by both');
});

test('route choice - a route to another host is TCP only, never shared memory', (t) => {
  const learnt = new LearntRoutes(reachableFromHere);
  const caller = new DirectCaller();
  t.teardown(() => caller.close());
  const segments = new SharedSegments({ create: () => [1, new ArrayBuffer(8)], open: () => new ArrayBuffer(8), close: () => undefined });
  const shm = new SharedMemoryRoute(learnt, caller, segments);
  const tcp = new DirectRoute(learnt, caller);
  const choice = new RouteChoice<PendingRequest>([shm, tcp, busRoute().route]);
  learnt.learn('ns.far', `another-host 192.0.2.7:4000 ${'ab'.repeat(16)}`);
  t.false(shm.carries('ns.far'));
  t.is(choice.choose('ns.far'), tcp);
  t.is(choice.mediumOf('ns.far'), 'tcp');
});
