/**
 * The control channel of a worker: small messages on `tb.ctl.<name>`,
 * dispatched by their kind `k` to the protocol that registered it (membership,
 * shutdown, streams, RRefs). A handler's return value, if any, is the reply.
 * @module
 */
import { defaultCodec, type InboundMessage, type Transport, type TransportSubscription } from '@tensorbus/core';
import { errorToWire } from '@tensorbus/core/internal';
import { controlSubject } from './subjects.js';

/** A control message: a kind and its fields. */
export interface ControlMessage {
  k: string;
  [field: string]: unknown;
}

/** Handles one kind; a returned value (or promise of one) is sent as the reply. */
export type ControlHandler = (message: ControlMessage) => unknown;

/** Routes control messages of one worker. */
export class ControlChannel {
  private readonly handlers = new Map<string, ControlHandler>();
  private subscription: TransportSubscription | undefined;
  /** Malformed control messages seen (dropped). */
  malformed = 0;

  constructor(private readonly transport: Transport, private readonly name: string) {}

  /** Registers the handler of messages of kind `kind`. */
  on(kind: string, handler: ControlHandler): void {
    this.handlers.set(kind, handler);
  }

  /** Starts listening on this worker's control subject. */
  listen(): void {
    // Only this worker serves its control subject: acknowledged messages (RRef protocol, status) may come direct.
    this.subscription = this.transport.subscribe(controlSubject(this.name), (m) => this.dispatch(m), { exclusive: true });
  }

  /** Sends a control message to `worker` without waiting. */
  send(worker: string, message: ControlMessage): void {
    this.transport.publish(controlSubject(worker), defaultCodec.encode(message));
  }

  /** Sends a control message to `worker` and decodes its reply. */
  async request(worker: string, message: ControlMessage, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    const reply = await this.transport.request(controlSubject(worker), defaultCodec.encode(message), { timeoutMs, signal });
    return defaultCodec.decode(reply);
  }

  close(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }

  private dispatch(inbound: InboundMessage): void {
    let message: ControlMessage;
    try {
      message = defaultCodec.decode(inbound.data) as ControlMessage;
      if (typeof message !== 'object' || message === null || typeof message.k !== 'string') throw new Error('no kind');
    } catch {
      this.malformed++;
      return;
    }
    const handler = this.handlers.get(message.k);
    if (!handler) {
      this.malformed++;
      return;
    }
    // Handled at once, in the order the bus delivered them: a `here` that came before a call has
    // made its sender known when the call is checked (call-auth.ts).
    let result: unknown;
    try {
      result = handler(message);
    } catch (error) {
      result = Promise.reject(error);
    }
    Promise.resolve(result)
      .then(
        (result) => {
          if (inbound.reply && result !== undefined) inbound.respond(defaultCodec.encode(result));
        },
        (error: unknown) => {
          if (inbound.reply) inbound.respond(defaultCodec.encode({ error: errorToWire(error) }));
        },
      )
      .catch(() => undefined);
  }
}
