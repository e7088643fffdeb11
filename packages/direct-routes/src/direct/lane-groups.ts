/**
 * The data port's side of lanes (see docs/data-plane.md): which of its
 * connections a requester joined into one group, and a large reply written
 * in parts, one on each connection of its request's group, so that several
 * TCP windows carry it at once.
 * @module
 */
import type { Socket } from 'node:net';
import type { DeferredBytes, Frame } from '@tensorbus/core';
import { MAX_LANES, PART_ALIGN, partHeader, STRIPE_MAX_BYTES, STRIPE_MIN_BYTES } from './direct-protocol.js';
import type { FrameWriter } from './frame-writer.js';
import { payloadRange } from './payload-range.js';

/** The connections of each lane group, and the group of each connection. */
export class LaneGroups {
  private readonly members = new Map<string, Socket[]>();
  private readonly groupOf = new Map<Socket, string>();

  /**
   * `socket` joins `group`. False when it may not (it is in another group
   * already, the group has {@link MAX_LANES} connections, or it comes from
   * another address than the group's first): the requester broke the
   * protocol, or someone else has its token, and the connection should go.
   * Groups are bounded by the connections of the port, which each join one
   * at most.
   */
  join(socket: Socket, group: string): boolean {
    const current = this.groupOf.get(socket);
    if (current !== undefined) return current === group;
    let sockets = this.members.get(group);
    if (sockets && (sockets.length >= MAX_LANES || sockets[0]!.remoteAddress !== socket.remoteAddress)) return false;
    if (!sockets) this.members.set(group, (sockets = []));
    sockets.push(socket);
    this.groupOf.set(socket, group);
    return true;
  }

  /** `socket` closed: it leaves its group, and a group left empty goes. */
  leave(socket: Socket): void {
    const group = this.groupOf.get(socket);
    if (group === undefined) return;
    this.groupOf.delete(socket);
    const rest = this.members.get(group)!.filter((s) => s !== socket);
    if (rest.length === 0) this.members.delete(group);
    else this.members.set(group, rest);
  }

  /**
   * The connections a reply of `size` to a request on `socket` goes out on,
   * `socket` first: undefined when it goes whole on `socket` (too small or
   * too large to stripe, or no other live connection in its group).
   */
  lanesFor(socket: Socket, size: number): Socket[] | undefined {
    if (size < STRIPE_MIN_BYTES || size > STRIPE_MAX_BYTES) return undefined;
    const group = this.groupOf.get(socket);
    if (group === undefined) return undefined;
    const others = this.members.get(group)!.filter((s) => s !== socket && !s.destroyed);
    return others.length > 0 ? [socket, ...others] : undefined;
  }

  /** Connections in groups (for tests). */
  get size(): number {
    return this.groupOf.size;
  }
}

/** Where the parts of a `total`-byte reply over `lanes` connections start and end: about equal, aligned. */
export function partsOf(total: number, lanes: number): { offset: number; length: number }[] {
  const each = Math.ceil(total / lanes / PART_ALIGN) * PART_ALIGN;
  const parts: { offset: number; length: number }[] = [];
  for (let offset = 0; offset < total; offset += each) parts.push({ offset, length: Math.min(each, total - offset) });
  return parts;
}

/**
 * Writes the reply `body` to request `id` in parts, one on each of
 * `writers` (those of its group's connections, the request's own first).
 * `onWritten` is told once every part has been taken by its socket. Each
 * writer holds its part (and so `body`) from now until written. False when
 * `body` can no longer be read (nothing is written then).
 */
export function writeStriped(writers: FrameWriter[], id: number, body: Frame | DeferredBytes, onWritten?: () => void): boolean {
  const parts = partsOf(body.byteLength, writers.length);
  let left = parts.length;
  const written = () => {
    if (--left === 0) onWritten?.();
  };
  for (let i = 0; i < parts.length; i++) {
    const { offset, length } = parts[i]!;
    const ok = writers[i]!.write(partHeader(id, body.byteLength, offset, length), payloadRange(body, offset, length), written);
    // Only the first can fail (the body was released before): none was written then.
    if (!ok) return false;
  }
  return true;
}
