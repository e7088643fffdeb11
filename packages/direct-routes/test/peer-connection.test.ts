import test from 'ava';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { Frame } from '@tensorbus/core';
import { ConnectionPool } from '../src/direct/connection-pool.js';
import { ConnectionLostError, ReplySizeError } from '../src/direct/peer-replies.js';
import { callHead, giveBackFrame, hostId, OP_RELEASE, REPLY_HEADER_BYTES, REPLY_OK, replyHeader } from '../src/direct/direct-protocol.js';
import { RequestParser, type DirectRequest } from '../src/direct/request-parser.js';
import { segmentRefBytes, type SegmentRef } from '../src/shm/shared-segments.js';

function body(size: number, seed: number): Buffer {
  const bytes = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 7 + seed) % 251;
  return bytes;
}

/** An offer of this host's loopback port `port` (a scripted port has no Unix socket: the pool connects over TCP). */
function offerOf(port: number) {
  return { hostId: hostId(), host: '127.0.0.1', port, token: Buffer.alloc(16) };
}

/** A data port that, once `requestBytes` bytes of requests have come, writes `pieces`, 20 ms apart. */
async function scriptedPort(requestBytes: number, pieces: Buffer[]): Promise<{ port: number; close(): void }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    let got = 0;
    socket.on('data', async (chunk: Buffer) => {
      got += chunk.byteLength;
      if (got < requestBytes) return;
      for (const piece of pieces) {
        socket.write(piece);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

test('peer connection - replies that share a read, split inside a header, refused or larger than one read each settle their own request', async (t) => {
  const large = body(40_000, 3);
  const stream = Buffer.concat([
    replyHeader(1, REPLY_OK, 5), Buffer.from('hello'),
    // Over request 2's limit: passed over, the connection stays in step.
    replyHeader(2, REPLY_OK, 10), body(10, 1),
    replyHeader(3, REPLY_OK, large.byteLength), large,
    replyHeader(4, REPLY_OK, 0),
    replyHeader(5, REPLY_OK, 3), Buffer.from('end'),
  ]);
  // Cut inside reply 3's header, inside its body, and inside reply 5's header.
  const third = 2 * REPLY_HEADER_BYTES + 5 + 10;
  const cuts = [third + 6, third + REPLY_HEADER_BYTES + 20_000, stream.byteLength - 3 - 7];
  const pieces = [stream.subarray(0, cuts[0]), stream.subarray(cuts[0], cuts[1]), stream.subarray(cuts[1], cuts[2]), stream.subarray(cuts[2])];
  const head = Buffer.alloc(8);
  const port = await scriptedPort(5 * head.byteLength, pieces);
  const pool = new ConnectionPool();
  t.teardown(() => {
    pool.close();
    port.close();
  });
  const connection = pool.get(offerOf(port.port));
  const replies = [
    connection.request(() => head),
    connection.request(() => head, undefined, undefined, { max: 4 }),
    connection.request(() => head),
    connection.request(() => head),
    connection.request(() => head),
  ];
  const [one, two, three, four, five] = await Promise.allSettled(replies);
  t.is(one.status, 'fulfilled');
  t.is(Buffer.from((one as PromiseFulfilledResult<{ data: { bytes: Uint8Array } }>).value.data.bytes).toString(), 'hello');
  t.true(two.status === 'rejected' && two.reason instanceof ReplySizeError, 'the reply over its limit fails its request only');
  t.true(three.status === 'fulfilled' && Buffer.from(three.value.data.bytes).equals(large), 'a body larger than one read arrives whole');
  t.true(four.status === 'fulfilled' && four.value.data.byteLength === 0);
  t.true(five.status === 'fulfilled' && Buffer.from(five.value.data.bytes).toString() === 'end');
  t.false(connection.broken);
});

const REF: SegmentRef = { pid: 4242, fd: 17, id: '0123456789abcdef', size: 1 << 20, length: 1000 };

test('peer connection - a give-back is one frame, the same both ways: a port\'s give-back returns the lent segment and the connection goes on', async (t) => {
  const frame = giveBackFrame(segmentRefBytes(REF));
  t.is(frame[0], OP_RELEASE);
  t.is(frame.byteLength, REPLY_HEADER_BYTES + 32);
  // The port answers the first request, then gives the segment back, then answers the second.
  const port = await scriptedPort(16, [Buffer.concat([replyHeader(1, REPLY_OK, 2), Buffer.from('ok')]), frame, Buffer.concat([replyHeader(2, REPLY_OK, 4), Buffer.from('more')])]);
  const pool = new ConnectionPool();
  t.teardown(() => {
    pool.close();
    port.close();
  });
  const connection = pool.get(offerOf(port.port));
  let returned = 0;
  connection.lend(REF, Frame.own(new Uint8Array(8), () => returned++));
  const head = Buffer.alloc(8);
  const [first, second] = await Promise.all([connection.request(() => head), connection.request(() => head)]);
  t.is(Buffer.from(first.data.bytes).toString(), 'ok');
  t.is(Buffer.from(second.data.bytes).toString(), 'more');
  t.is(returned, 1, 'the lent segment came back');
  t.false(connection.broken);
});

test('peer connection - the data port reads the requester\'s give-back as the same frame, and refuses a malformed one', (t) => {
  const got: DirectRequest[] = [];
  const parser = new RequestParser((request) => got.push(request));
  const frame = giveBackFrame(segmentRefBytes(REF));
  // Split anywhere, it is one give-back.
  parser.feed(frame.subarray(0, 20));
  parser.feed(frame.subarray(20));
  t.deepEqual(got, [{ op: 'release', ref: REF }]);
  const malformed = Buffer.from(frame);
  malformed.writeUInt32BE(7, 1);
  t.throws(() => new RequestParser(() => undefined).feed(malformed), { message: /malformed give-back/ });
});

/** A CALL frame (head and body) as a requester writes it. */
function callFrame(id: number, token: Buffer, subject: string, data: Buffer): Buffer {
  return Buffer.concat([callHead(id, token, subject, data.length), data]);
}

test('peer connection - the data port reads each call\'s own route token and subject, on a connection whose calls change them', (t) => {
  const got: Array<[string, string]> = [];
  const admitted: Array<[string, string]> = [];
  const parser = new RequestParser(
    (request) => {
      if (request.op !== 'call') return;
      got.push([request.token, request.subject]);
      request.data.release();
    },
    (token, subject) => (admitted.push([token, subject]), true),
  );
  const a = Buffer.alloc(16, 0xaa);
  const b = Buffer.from(a);
  b[15] = 0xab; // differs in its last byte only
  const calls: Array<[Buffer, string]> = [[a, 'tb.call.w1'], [a, 'tb.call.w1'], [b, 'tb.call.w1'], [b, 'tb.call.w2'], [a, 'tb.ctl.w2'], [a, 'tb.call.w1'], [a, '']];
  parser.feed(Buffer.concat(calls.map(([token, subject], i) => callFrame(i + 1, token, subject, body(3, i)))));
  const expected = calls.map(([token, subject]) => [token.toString('hex'), subject]);
  t.deepEqual(got, expected);
  t.deepEqual(admitted, expected);
});

test('peer connection - a reply that stops coming fails its request after the stall timeout; one that keeps coming, however slowly, does not', async (t) => {
  const stallMs = 300;
  const slow = body(3_000, 5);
  // 30 pieces 20 ms apart: twice the stall timeout in all, never that long without a byte.
  const trickle = [replyHeader(1, REPLY_OK, slow.byteLength), ...Array.from({ length: 30 }, (_, i) => slow.subarray(i * 100, (i + 1) * 100))];
  const stuck = [replyHeader(1, REPLY_OK, 1_000), body(10, 2)];
  const head = Buffer.alloc(8);
  const ports = [await scriptedPort(head.byteLength, trickle), await scriptedPort(head.byteLength, stuck)];
  const pool = new ConnectionPool({ stallTimeoutMs: stallMs });
  t.teardown(() => {
    pool.close();
    for (const port of ports) port.close();
  });
  const slowReply = await pool.get(offerOf(ports[0]!.port)).request(() => head);
  t.true(Buffer.from(slowReply.data.bytes).equals(slow), 'the slow reply arrives whole');
  const started = Date.now();
  const error = await t.throwsAsync(pool.get(offerOf(ports[1]!.port)).request(() => head), { instanceOf: ConnectionLostError });
  const waited = Date.now() - started;
  t.regex(error!.message, /made no progress for 300 ms/);
  t.true(waited >= stallMs - 20 && waited < stallMs + 1_500, `failed after ${waited} ms`);
});
