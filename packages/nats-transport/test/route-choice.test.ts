/**
 * The one place that chooses a request's route (route-choice.ts): the first
 * route that carries its subject takes it, the bus last; a route that did not
 * deliver it hands it to the next one, and a request settled meanwhile is not
 * sent again.
 */
import test from 'ava';
import { Frame, RpcTimeoutError } from '@tensorbus/core';
import type { HeldPayload } from '@tensorbus/core/internal';
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
  const direct = directRoute(['ns.w1'], 'undelivered');
  const bus = busRoute();
  const choice = new RouteChoice<PendingRequest>([direct.route, bus.route]);
  const request = table.open({ subject: 'ns.w1', label: 'w1', timeoutMs: 1 });
  choice.send(request, payload, undefined);
  await t.throwsAsync(request.promise, { instanceOf: RpcTimeoutError });
  await new Promise((resolve) => setTimeout(resolve, 30));
  t.deepEqual(direct.sent, ['ns.w1']);
  t.deepEqual(bus.published, [], 'the timed-out request never went on the bus');
});
