/**
 * Splits the byte stream a data-port connection receives into requests:
 * GETs of offered payloads, calls on direct routes whose payloads are
 * copied straight into their own (pooled) buffers, calls whose payloads lie
 * in shared memory (whole, or still filling), segments given back, and
 * connections joining a lane group.
 * @module
 */
import { TransportError, type Frame } from '@tensorbus/core';
import { acquireFrame } from '@tensorbus/core/internal';
import { readSegmentRef, SEGMENT_REF_BYTES, type SegmentRef } from '../shm/shared-segments.js';
import { CALL_HEAD_BYTES, GET_BYTES, LANE_BYTES, OP_CALL, OP_CALL_FILLING, OP_CALL_PULLED, OP_CALL_SHM, OP_GET, OP_LANE, OP_RELEASE, readSize, REPLY_HEADER_BYTES, TOKEN_BYTES } from './direct-protocol.js';

/** A request read off a connection. */
export type DirectRequest =
  | { op: 'get'; id: number; token: string }
  /** `data` is the receiver's share: release it, or hand it on. */
  | { op: 'call'; id: number; token: string; subject: string; data: Frame }
  | { op: 'refused'; id: number }
  | { op: 'pulled'; id: number; token: string; subject: string; offer: string; size: number }
  /** `filling`: the requester is still copying it in (see shm/filling.ts). */
  | { op: 'shm'; id: number; token: string; subject: string; ref: SegmentRef; filling: boolean }
  | { op: 'release'; ref: SegmentRef }
  /** This connection joins the lane group `group` (hex) as lane `index`. */
  | { op: 'lane'; group: string; index: number };

/** Says whether a call on route `token` to `subject` may be taken (its body buffered). */
export type CallAdmission = (token: string, subject: string) => boolean;

interface Body {
  id: number;
  token: string;
  subject: string;
  target: Frame;
  got: number;
}

/** The request stream is not this protocol, or declares more than the port takes: drop the connection. */
export class MalformedRequestError extends TransportError {
  override readonly name = 'MalformedRequestError';
}

/** No bytes left over (shared: never written to). */
const NOTHING = Buffer.alloc(0);

/**
 * The text of a field that repeats from one request to the next on a
 * connection (a call's route token, its subject): decoded when its bytes
 * change, reused while they are the same (compared byte for byte, no string
 * made per call). The bytes kept are a copy of what this connection sent.
 */
class RepeatedText {
  private bytes: Buffer = NOTHING;
  private text = '';

  constructor(private readonly encoding: 'hex' | 'utf8') {}

  /** The text of `input[start, end)`. */
  of(input: Buffer, start: number, end: number): string {
    const kept = this.bytes;
    const n = end - start;
    let same = n === kept.length;
    for (let i = 0; same && i < n; i++) same = input[start + i] === kept[i];
    if (same) return this.text;
    this.bytes = Buffer.from(input.subarray(start, end));
    this.text = input.toString(this.encoding, start, end);
    return this.text;
  }
}

/** Feeds chunks in, gets requests out; throws MalformedRequestError on bytes that are not this protocol. */
export class RequestParser {
  private pending: Buffer = NOTHING;
  private body: Body | undefined;
  /** Bytes of a refused call's body still to pass over (never buffered). */
  private skip = 0;
  /** The route token and subject of the calls on this connection (the same, call after call). */
  private readonly token = new RepeatedText('hex');
  private readonly subject = new RepeatedText('utf8');

  /**
   * @param admit checked before a call's body is buffered: a call it refuses
   *   is emitted as `refused` and its body skipped as it arrives
   * @param maxCallBytes larger declared bodies drop the connection
   */
  constructor(
    private readonly emit: (request: DirectRequest) => void,
    private readonly admit: CallAdmission = () => true,
    private readonly maxCallBytes = 2 ** 31 - 1,
  ) {}

  /** True while a call's body is partly read (the connection is not idle). */
  get midBody(): boolean {
    return this.body !== undefined || this.skip > 0;
  }

  /** Consumes `chunk`; throws Error on a malformed stream (drop the connection). */
  feed(chunk: Buffer): void {
    let input: Buffer = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    for (;;) {
      if (this.skip > 0) {
        const n = Math.min(this.skip, input.length);
        this.skip -= n;
        input = input.subarray(n);
        if (this.skip > 0) break;
        continue;
      }
      if (this.body) {
        const body = this.body;
        const n = Math.min(body.target.byteLength - body.got, input.length);
        body.target.bytes.set(input.subarray(0, n), body.got);
        body.got += n;
        input = input.subarray(n);
        if (body.got < body.target.byteLength) break;
        this.body = undefined;
        this.emit({ op: 'call', id: body.id, token: body.token, subject: body.subject, data: body.target });
        continue;
      }
      if (input.length === 0) break;
      const op = input[0];
      if (op === OP_GET) {
        if (input.length < GET_BYTES) break;
        this.emit({ op: 'get', id: input.readUInt32BE(1), token: input.subarray(5, GET_BYTES).toString('hex') });
        input = input.subarray(GET_BYTES);
      } else if (op === OP_CALL) {
        if (input.length < CALL_HEAD_BYTES) break;
        const subjectBytes = input.readUInt16BE(CALL_HEAD_BYTES - 2);
        const headEnd = CALL_HEAD_BYTES + subjectBytes + 8;
        if (input.length < headEnd) break;
        const size = readSize(input, headEnd - 8);
        if (size > this.maxCallBytes) throw new MalformedRequestError(`a direct call declared ${size} bytes; the limit is ${this.maxCallBytes}`);
        const id = input.readUInt32BE(1);
        const token = this.token.of(input, 5, 5 + TOKEN_BYTES);
        const subject = this.subject.of(input, CALL_HEAD_BYTES, CALL_HEAD_BYTES + subjectBytes);
        input = input.subarray(headEnd);
        // Checked before anything is allocated: a call without a valid route costs no memory.
        if (!this.admit(token, subject)) {
          this.skip = size;
          this.emit({ op: 'refused', id });
          continue;
        }
        this.body = { id, token, subject, target: acquireFrame(size), got: 0 };
      } else if (op === OP_CALL_PULLED) {
        if (input.length < CALL_HEAD_BYTES) break;
        const subjectEnd = CALL_HEAD_BYTES + input.readUInt16BE(CALL_HEAD_BYTES - 2);
        if (input.length < subjectEnd + 2) break;
        const offerEnd = subjectEnd + 2 + input.readUInt16BE(subjectEnd);
        if (input.length < offerEnd + 8) break;
        this.emit({
          op: 'pulled',
          id: input.readUInt32BE(1),
          token: this.token.of(input, 5, 5 + TOKEN_BYTES),
          subject: this.subject.of(input, CALL_HEAD_BYTES, subjectEnd),
          offer: input.subarray(subjectEnd + 2, offerEnd).toString('utf8'),
          size: readSize(input, offerEnd),
        });
        input = input.subarray(offerEnd + 8);
      } else if (op === OP_CALL_SHM || op === OP_CALL_FILLING) {
        if (input.length < CALL_HEAD_BYTES) break;
        const subjectEnd = CALL_HEAD_BYTES + input.readUInt16BE(CALL_HEAD_BYTES - 2);
        if (input.length < subjectEnd + SEGMENT_REF_BYTES) break;
        this.emit({
          op: 'shm',
          id: input.readUInt32BE(1),
          token: this.token.of(input, 5, 5 + TOKEN_BYTES),
          subject: this.subject.of(input, CALL_HEAD_BYTES, subjectEnd),
          ref: readSegmentRef(input, subjectEnd),
          filling: op === OP_CALL_FILLING,
        });
        input = input.subarray(subjectEnd + SEGMENT_REF_BYTES);
      } else if (op === OP_LANE) {
        if (input.length < LANE_BYTES) break;
        this.emit({ op: 'lane', group: input.subarray(1, 1 + TOKEN_BYTES).toString('hex'), index: input[LANE_BYTES - 1]! });
        input = input.subarray(LANE_BYTES);
      } else if (op === OP_RELEASE) {
        if (input.length < REPLY_HEADER_BYTES + SEGMENT_REF_BYTES) break;
        if (input.readUInt32BE(1) !== 0 || readSize(input, 6) !== SEGMENT_REF_BYTES) throw new MalformedRequestError('a malformed give-back');
        this.emit({ op: 'release', ref: readSegmentRef(input, REPLY_HEADER_BYTES) });
        input = input.subarray(REPLY_HEADER_BYTES + SEGMENT_REF_BYTES);
      } else {
        throw new MalformedRequestError(`unknown op ${op}`);
      }
    }
    // Keep what is left (a partial header) on its own, not the whole chunk it sits in.
    this.pending = input.length === 0 ? NOTHING : Buffer.from(input);
  }

  /** Frees a partly received payload (the connection closed). */
  close(): void {
    this.body?.target.release();
    this.body = undefined;
  }
}
