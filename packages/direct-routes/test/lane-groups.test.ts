import test from 'ava';
import type { Socket } from 'node:net';
import { InvalidArgumentError } from '@tensorbus/core';
import { LaneGroups, partsOf } from '../src/direct/lane-groups.js';
import { natsTransport } from '@tensorbus/nats-transport';
import { MAX_LANES, PART_ALIGN, STRIPE_MAX_BYTES, STRIPE_MIN_BYTES } from '../src/direct/direct-protocol.js';

/** A stand-in for an accepted connection: what the groups look at. */
function connection(remoteAddress = '10.0.0.2'): Socket {
  return { remoteAddress, destroyed: false } as unknown as Socket;
}

test('lane groups - a data port keeps a group to eight connections of one address, each in one group, and forgets it with them', (t) => {
  const groups = new LaneGroups();
  const members = Array.from({ length: MAX_LANES }, () => connection());
  for (const member of members) t.true(groups.join(member, 'g'));
  t.false(groups.join(connection(), 'g'), 'a ninth connection is refused');
  t.true(groups.join(members[3]!, 'g'), 'joining its own group again changes nothing');
  t.false(groups.join(members[3]!, 'h'), 'a connection joins one group only');
  t.true(groups.join(connection('10.0.0.9'), 'h'), 'another group, from another address');
  t.false(groups.join(connection('10.0.0.7'), 'h'), 'a connection from another address than the group\'s is refused, token or not');
  t.is(groups.size, MAX_LANES + 1);
  for (const member of members) groups.leave(member);
  t.is(groups.size, 1, 'the group went with its connections');
  t.true(groups.join(connection('10.0.0.5'), 'g'), 'its token starts a new group from scratch');
});

test('lane groups - only replies of 1–64 MiB to a grouped connection go striped, over its live connections, its own first', (t) => {
  const groups = new LaneGroups();
  const [first, second, third] = [connection(), connection(), connection()];
  t.is(groups.lanesFor(first, STRIPE_MIN_BYTES), undefined, 'not grouped');
  groups.join(first, 'g');
  t.is(groups.lanesFor(first, STRIPE_MIN_BYTES), undefined, 'no other connection in its group');
  groups.join(second, 'g');
  groups.join(third, 'g');
  t.deepEqual(groups.lanesFor(second, STRIPE_MIN_BYTES), [second, first, third]);
  t.is(groups.lanesFor(first, STRIPE_MIN_BYTES - 1), undefined, 'too small');
  t.is(groups.lanesFor(first, STRIPE_MAX_BYTES + 1), undefined, 'too large');
  (third as { destroyed: boolean }).destroyed = true;
  t.deepEqual(groups.lanesFor(first, STRIPE_MAX_BYTES), [first, second], 'a closed connection carries nothing');
});

test('lane groups - parts tile the reply, about equal, each starting on a page', (t) => {
  for (const [total, lanes] of [[4 * 2 ** 20 + 54, 8], [STRIPE_MIN_BYTES, 3], [STRIPE_MAX_BYTES, 8], [5_000_001, 7]] as const) {
    const parts = partsOf(total, lanes);
    t.is(parts.length, lanes, `${total} bytes over ${lanes}: a part per lane`);
    let end = 0;
    for (const { offset, length } of parts) {
      t.is(offset, end, 'no gap, no overlap');
      t.is(offset % PART_ALIGN, 0);
      end = offset + length;
    }
    t.is(end, total);
    const lengths = parts.map((part) => part.length);
    t.true(Math.max(...lengths) - Math.min(...lengths) <= lanes * 4096, `about equal: ${lengths.join(", ")}`);
  }
});

test('lane groups - a count of lanes out of range is refused before anything connects', async (t) => {
  for (const lanes of [0, 9, 2.5, Number.NaN, -1]) {
    await t.throwsAsync(natsTransport({ servers: 'nats://127.0.0.1:1', direct: { lanes } }), { instanceOf: InvalidArgumentError, message: /lanes/ }, String(lanes));
  }
});
