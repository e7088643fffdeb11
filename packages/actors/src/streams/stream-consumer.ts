/**
 * The caller's side of streams: a cold {@link RpcStream} per `rpcStream` call
 * that opens the stream on subscribe (or on the first pull), returns credit as
 * its consumer finishes with items, and cancels the producer on unsubscribe.
 * @module
 */
import { defaultCodec, SerializationError, WorkerUnavailableError, type Transport } from '@tensorbus/core';
import { errorFromWire, type WireError } from '@tensorbus/core/internal';
import type { AgentHost, CallOptions } from '../agent/host.js';
import { MAX_STREAM_CREDIT } from '../agent/call-protocol.js';
import { RpcStream, type StreamChannel, type StreamSink } from './rpc-stream.js';
import { DEFAULT_STREAM_CREDIT, END, FAIL, ITEM, STREAM_CANCEL, STREAM_CREDIT } from './stream-protocol.js';
import { streamSubject } from '../agent/subjects.js';

/** Options of `rpcStream`. */
export interface StreamOptions extends CallOptions {
  /** Items the producer may send ahead of the subscriber. Default 16. */
  credit?: number;
}

/** Opens streams from this worker and fails them when their producer goes away. */
export class StreamConsumers {
  private nextId = 0;
  private readonly byProducer = new Map<string, Set<(error: Error) => void>>();

  private readonly transport: Transport;
  private readonly self: string;

  constructor(private readonly host: AgentHost) {
    this.transport = host.transport;
    this.self = host.name;
  }

  /** A cold stream of the items `fn(args)` yields on `to`. */
  open<T>(to: string, fn: string, args: unknown[], options: StreamOptions = {}): RpcStream<T> {
    return new RpcStream<T>((sink) => this.openChannel(to, fn, args, options, sink));
  }

  /**
   * Opens one stream: items go to `sink`; credit goes back to the producer
   * only as the consumer reports items finished through the returned channel.
   */
  private openChannel<T>(to: string, fn: string, args: unknown[], options: StreamOptions, sink: StreamSink<T>): StreamChannel {
    const id = ++this.nextId;
    const credit = Math.min(MAX_STREAM_CREDIT, Math.max(1, Math.floor(options.credit ?? DEFAULT_STREAM_CREDIT)));
    const subject = streamSubject(this.self, id);
    let expected = 0;
    let consumed = 0;
    let finished = false;
    const finish = () => {
      finished = true;
      subscription.unsubscribe();
      failers!.delete(fail);
    };
    const fail = (error: Error) => {
      if (finished) return;
      finish();
      sink.fail(error);
    };
    let failers = this.byProducer.get(to);
    if (!failers) this.byProducer.set(to, (failers = new Set()));
    failers.add(fail);
    const subscription = this.transport.subscribe(subject, (message) => {
      if (finished) return;
      let frame: unknown[];
      try {
        frame = defaultCodec.decode(message.data, { host: this.host, peer: to }) as unknown[];
        if (!Array.isArray(frame) || frame[1] !== expected) throw new SerializationError(`stream item ${expected} was lost or reordered`);
      } catch (error) {
        this.host.sendControl(to, { k: STREAM_CANCEL, caller: this.self, id });
        fail(error instanceof Error ? error : new SerializationError(String(error)));
        return;
      }
      expected++;
      if (frame[0] === ITEM) {
        sink.item(frame[2] as T);
      } else if (frame[0] === END) {
        finish();
        sink.end();
      } else if (frame[0] === FAIL) {
        fail(errorFromWire(frame[2] as WireError));
      }
    });
    // The item subscription must be live on the bus before the producer can publish: the open
    // request may travel another way (a direct route) and overtake it.
    this.transport
      .flush()
      .then(() => (finished ? undefined : this.host.openStream(to, fn, args, { id, subject, credit }, options)))
      .catch((error: Error) => fail(error));
    return {
      // Credit goes back in batches of half the window: one control message per credit/2 items.
      consumed: (n: number) => {
        consumed += n;
        if (consumed >= Math.ceil(credit / 2) && !finished) {
          this.host.sendControl(to, { k: STREAM_CREDIT, caller: this.self, id, n: consumed });
          consumed = 0;
        }
      },
      cancel: () => {
        if (finished) return;
        finish();
        try {
          this.host.sendControl(to, { k: STREAM_CANCEL, caller: this.self, id });
        } catch {
          // The bus is closed: the producer stops when it sees this worker gone.
        }
      },
    };
  }

  /** Fails the streams produced by `worker`. */
  producerGone(worker: string, reason: string): void {
    for (const fail of [...(this.byProducer.get(worker) ?? [])]) {
      fail(new WorkerUnavailableError(`worker '${worker}' ${reason} while streaming`));
    }
    this.byProducer.delete(worker);
  }

  /** Fails every open stream with `error`. */
  failAll(error: Error): void {
    for (const failers of this.byProducer.values()) for (const fail of [...failers]) fail(error);
    this.byProducer.clear();
  }
}
