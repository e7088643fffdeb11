/**
 * The sending side of chunked transfers: announces a large payload, then
 * serves each receiver's pulls with at most `credit` chunks ahead.
 * @module
 */
import type { Msg, MsgHdrs, NatsConnection, Subscription } from 'nats';
import { headers } from '../nats-client.js';
import { TransportError, type Frame } from '@tensorbus/core';
import type { Offered } from '@tensorbus/direct-routes';
import { isValidSubject } from '../subject-check.js';
import { H_DIRECT, H_ROUTE } from '@tensorbus/direct-routes/headers';
import { DEFAULT_WINDOW, H_CHUNK, H_PULL, H_SEQ, H_SIZE, H_TRANSFER, type PullMessage } from './chunk-protocol.js';

/** How a transfer ends for the sender. */
export interface SendOutcome {
  /** Resolves when one receiver got everything; rejects when the transfer failed. */
  delivered: Promise<void>;
  /** Stops serving and lets go of the payload. */
  cancel(reason: string): void;
}

interface Puller {
  next: number;
  credit: number;
}

let transfers = 0;
/** Tells this process's transfers from others' in logs: its pid in Node, a random tag in a browser (no process). */
const senderTag = typeof process === 'undefined' ? `tab-${Math.random().toString(36).slice(2, 10)}` : String(process.pid);

/** What {@link sendChunked} sends, and how. */
export interface ChunkedSend {
  /** Where the announcement goes. */
  subject: string;
  /** The announcement's reply subject (requests), if any. */
  reply?: string;
  /** The payload: the transfer takes this share and releases it when it ends. */
  frame: Frame;
  /** Bytes of each chunk but the last. */
  chunkSize: number;
  /** A transfer with no progress for this long fails, ms. */
  timeoutMs: number;
  /** Makes a fresh inbox subject (the pull subject). */
  inbox: () => string;
  /** Keep serving further receivers until idle (publish to several subscribers), not the first one only. */
  keepForMore?: boolean;
  /** The payload's offer on the direct data plane, named in the announcement; chunks remain the fallback. */
  direct?: Offered;
  /** A direct route offered for later requests (on replies). */
  route?: string;
}

/**
 * Announces `send.frame` on `send.subject` and serves chunks to receivers
 * that pull them (see {@link ChunkedSend} for each option). The transfer
 * releases its share of the frame when it ends: pinned if a chunk went out,
 * since the NATS client may still hold the chunk's bytes in its write queue
 * then.
 */
export function sendChunked(nc: NatsConnection, send: ChunkedSend): SendOutcome {
  const { subject, reply, frame, chunkSize, timeoutMs, inbox, keepForMore = false, direct, route } = send;
  const data = frame.bytes;
  let chunked = false;
  const transferId = `${senderTag}.${++transfers}`;
  const pullSubject = inbox();
  // Chunks go only to inboxes (the receivers make their chunk subjects as this transport makes its
  // own): a puller cannot have this sender publish the payload on a subject of its choosing.
  const inboxPrefix = pullSubject.slice(0, pullSubject.lastIndexOf('.') + 1);
  const chunks = Math.ceil(data.byteLength / chunkSize);
  const pullers = new Map<string, Puller>();
  let settled = false;
  let resolveDelivered!: () => void;
  let rejectDelivered!: (error: Error) => void;
  const delivered = new Promise<void>((resolve, reject) => {
    resolveDelivered = resolve;
    rejectDelivered = reject;
  });
  delivered.catch(() => undefined);
  let idle: NodeJS.Timeout;
  const touch = () => {
    clearTimeout(idle);
    idle = setTimeout(() => finish(keepForMore && pullers.size === 0 && deliveredOnce ? undefined : new TransportError(`chunked transfer ${transferId} to '${subject}' made no progress for ${timeoutMs} ms: the receiver is gone or too slow`)), timeoutMs);
    idle.unref?.();
  };
  let deliveredOnce = false;
  let sub: Subscription | undefined;
  const finish = (error?: Error) => {
    if (settled) return;
    settled = true;
    clearTimeout(idle);
    sub?.unsubscribe();
    direct?.withdraw();
    if (chunked) frame.pin();
    frame.release();
    pullers.clear();
    if (error && !deliveredOnce) rejectDelivered(error);
    else resolveDelivered();
  };
  const pump = (receiver: string, puller: Puller) => {
    while (puller.credit > 0 && puller.next < chunks && !settled) {
      const k = puller.next++;
      puller.credit--;
      chunked = true;
      const h = headers();
      h.set(H_SEQ, String(k));
      nc.publish(receiver, data.subarray(k * chunkSize, Math.min(data.byteLength, (k + 1) * chunkSize)), { headers: h });
    }
    if (puller.next >= chunks) {
      pullers.delete(receiver);
      deliveredOnce = true;
      if (!keepForMore) finish();
      else resolveDelivered();
    }
  };
  sub = nc.subscribe(pullSubject, {
    // A throw in a NATS callback would stop the connection's reader: a failure here fails this transfer only.
    callback: (err, msg) => {
      try {
        onPull(err, msg);
      } catch (error) {
        finish(new TransportError(`chunked transfer ${transferId} to '${subject}' failed: ${(error as Error).message}`));
      }
    },
  });
  function onPull(err: Error | null, msg: Msg): void {
    if (err || settled) return;
    let pull: PullMessage;
    try {
      pull = JSON.parse(new TextDecoder().decode(msg.data)) as PullMessage;
    } catch {
      return;
    }
    // Checked here, where it arrives: chunks are published to it. A plain subject (one with a space or a
    // line break would write protocol lines of its own) under the inboxes this transport makes.
    if (typeof pull.s !== 'string' || (pull.done !== true && !(pull.s.startsWith(inboxPrefix) && isValidSubject(pull.s)))) return;
    touch();
    if (pull.done === true) {
      deliveredOnce = true;
      if (!keepForMore) finish();
      else resolveDelivered();
      return;
    }
    if (pull.abort !== undefined) {
      pullers.delete(pull.s);
      if (!keepForMore) finish(new TransportError(`the receiver of a ${data.byteLength}-byte transfer to '${subject}' gave up: ${pull.abort}`));
      return;
    }
    let puller = pullers.get(pull.s);
    if (!puller) pullers.set(pull.s, (puller = { next: 0, credit: 0 }));
    const credit = Number(pull.c ?? DEFAULT_WINDOW);
    puller.credit += Number.isFinite(credit) ? Math.max(0, Math.min(credit, 1_024)) : 0;
    // Bounded: a puller's credit never exceeds what the transfer has left.
    puller.credit = Math.min(puller.credit, chunks);
    pump(pull.s, puller);
  }
  const h: MsgHdrs = headers();
  h.set(H_TRANSFER, transferId);
  h.set(H_SIZE, String(data.byteLength));
  h.set(H_CHUNK, String(chunkSize));
  h.set(H_PULL, pullSubject);
  if (direct) h.set(H_DIRECT, direct.header);
  if (route) h.set(H_ROUTE, route);
  touch();
  nc.publish(subject, new Uint8Array(0), { headers: h, reply });
  return { delivered, cancel: (reason) => finish(new TransportError(reason)) };
}
