/**
 * The requester's side of lanes (see docs/data-plane.md): the connections it
 * opened to one data port beside its first one, and the striped replies they
 * bring in parts, each put together where it belongs (striped-reply.ts).
 * Nothing a part says is trusted: its request must be pending on the first
 * connection, its size acceptable to that request, and its bytes must fit
 * the reply without overlapping another part's.
 * @module
 */
import type { Frame, FrameSink } from '@tensorbus/core';
import { StripedReply, type IncomingPart } from './striped-reply.js';

/** The most parts one reply may come in (a data port sends one per lane). */
const MAX_PARTS = 64;

/** What the group's first connection does for it: the requests are its own. */
export interface LaneOwner {
  /**
   * Whether a reply of `size` to request `id` is taken: undefined when it is,
   * 'fail' when the data port broke the protocol (no such request, or a
   * fetch of another size), or why only this request is refused.
   */
  accepts(id: number, size: number): string | undefined;
  /** Request `id` fails with `why` (its reply was refused); its parts are passed over. */
  refuse(id: number, why: string): void;
  /** The sink request `id`'s reply of `size` bytes goes into, if it has one (asked once per reply). */
  sinkFor(id: number, size: number): FrameSink | undefined;
  /** Reads may go straight into a sink's memory (it stays put while a read is under way). */
  readonly readsIntoSink: boolean;
  /** The whole reply to request `id` is in `frame` (the owner's share), or in its sink (frame undefined). */
  settleStriped(id: number, frame: Frame | undefined): void;
  /** Bytes arrived for the owner's requests (its stall timer starts again). */
  touch(): void;
  /** The group cannot go on: the first connection fails, and its requests with it. */
  fail(why: string): void;
}

/** Where a part goes: a place its bytes are read into, nowhere (its reply was refused), or the lane must fail. */
export type PartPlace = { part: IncomingPart } | { discard: true } | { error: string };

/** A reply coming in parts, and the spans of it that have begun to arrive. */
interface Coming {
  reply: StripedReply;
  spans: [number, number][];
}

/** A requester's lanes to one data port, and the replies they bring. */
export class ReplyLanes {
  private readonly replies = new Map<number, Coming>();
  private readonly lanes: { close(): void }[] = [];
  private closed = false;

  constructor(private readonly owner: LaneOwner) {}

  /** Adds a lane (closed with the group). */
  add(lane: { close(): void }): void {
    if (this.closed) lane.close();
    else this.lanes.push(lane);
  }

  /** Where the part of `length` bytes at `offset` of the `total`-byte reply to request `id` goes. */
  place(id: number, total: number, offset: number, length: number): PartPlace {
    if (length === 0 || offset + length > total) return { error: `sent a part (${offset}+${length}) outside its reply of ${total} bytes` };
    let coming = this.replies.get(id);
    if (!coming) {
      const problem = this.owner.accepts(id, total);
      if (problem === 'fail') return { error: `sent a part of a reply of ${total} bytes to request ${id}, which does not take it` };
      const into = problem === undefined ? { sink: this.owner.sinkFor(id, total), direct: this.owner.readsIntoSink } : 'nowhere';
      coming = { reply: new StripedReply(total, into, (frame) => this.settle(id, frame)), spans: [] };
      this.replies.set(id, coming);
      if (problem !== undefined) this.owner.refuse(id, problem);
    }
    const { reply, spans } = coming;
    if (total !== reply.total) return { error: `sent parts of one reply with sizes ${reply.total} and ${total}` };
    if (spans.length >= MAX_PARTS) return { error: `sent a reply in over ${MAX_PARTS} parts` };
    const end = offset + length;
    if (spans.some(([from, to]) => offset < to && from < end)) return { error: `sent overlapping parts of a reply (${offset}+${length})` };
    spans.push([offset, end]);
    this.owner.touch();
    if (reply.refused) {
      // Counted now, so the refused reply is forgotten once all its parts have begun.
      if (spans.reduce((sum, [from, to]) => sum + to - from, 0) === total) this.replies.delete(id);
      return { discard: true };
    }
    // Bytes on any lane are progress of the owner's request (its stall timer starts again).
    const part = reply.part(offset, length);
    const owner = this.owner;
    return {
      part: {
        target: () => part.target(),
        advance: (n) => {
          owner.touch();
          part.advance(n);
        },
        get left() {
          return part.left;
        },
      },
    };
  }

  /** Request `id`'s reply is whole. */
  private settle(id: number, frame: Frame | undefined): void {
    this.replies.delete(id);
    this.owner.touch();
    this.owner.settleStriped(id, frame);
  }

  /**
   * A lane broke or closed. While a reply is coming, its parts may have been
   * on it: the first connection fails (and its requests with it) rather than
   * wait for bytes that will not come. Otherwise the group goes on without it.
   */
  laneLost(lane: { close(): void }): void {
    if (this.closed) return;
    const at = this.lanes.indexOf(lane);
    if (at >= 0) this.lanes.splice(at, 1);
    if (this.replies.size > 0) this.owner.fail('lost a lane while a striped reply was coming');
  }

  /** Closes the lanes and drops the replies coming (the first connection failed or closed). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const { reply } of this.replies.values()) reply.drop();
    this.replies.clear();
    for (const lane of this.lanes.splice(0)) lane.close();
  }

  /** Lanes open beside the first connection. */
  get size(): number {
    return this.lanes.length;
  }
}
