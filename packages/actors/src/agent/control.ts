/**
 * The control channel of a worker: small messages on `tb.ctl.<name>`,
 * dispatched by their kind `k` to the protocol plugin that declared it
 * (membership, shutdown, streams, RRefs; see host.ts). A kind is declared by
 * one plugin only, has one handler, and only declared kinds are sent. A
 * handler's return value, if any, is the reply.
 *
 * Once authenticated (see {@link ControlChannel.authenticate}), messages go in
 * an envelope `['tbctl', bytes, from, [counter, mac]]` whose MAC covers the
 * message's bytes with the pair key of the call MACs (call-auth.ts), and each
 * handler is told who sent the message and whether that was shown. A message
 * without an envelope is still handled, with no sender.
 * @module
 */
import { defaultCodec, hasSinks, InvalidArgumentError, type InboundMessage, type Transport, type TransportSubscription } from '@tensorbus/core';
import { decodeWithoutTensors } from '../tensors.js';
import { errorToWire } from '@tensorbus/core/internal';
import type { CallAuth } from './call-auth.js';
import type { CallerIdentity } from './call-context.js';
import { controlSubject } from './subjects.js';
import { traceHandledControl, traceSentControl } from '../observe/control-spans.js';
import { observing } from '../observe/switch.js';
import { isWorkerName } from './wire-checks.js';

/** First element of an authenticated control message. */
const ENVELOPE = 'tbctl';
/** The MAC kind of control messages (calls are 0 and 1). */
export const CONTROL_KIND = 2;

/** A control message: a kind and its fields. */
export interface ControlMessage {
  k: string;
  [field: string]: unknown;
}

/**
 * Handles one kind; a returned value (or promise of one) is sent as the reply.
 * `sender` is who the message says sent it and whether its MAC showed that
 * (as for calls: see CallScope.verified); undefined for a message that names
 * no sender.
 */
export type ControlHandler = (message: ControlMessage, sender: CallerIdentity | undefined) => unknown;

/** Routes control messages of one worker. */
export class ControlChannel {
  private readonly handlers = new Map<string, ControlHandler>();
  /** Declared kind -> the plugin that declared it. */
  private readonly declared = new Map<string, string>();
  private subscription: TransportSubscription | undefined;
  /** Control messages refused as malformed or of a kind no plugin declared. */
  malformed = 0;

  private auth: CallAuth | undefined;

  constructor(private readonly transport: Transport, private readonly name: string) {}

  /** From now on, messages sent carry this worker's name and a MAC, and received ones are checked. */
  authenticate(auth: CallAuth): void {
    this.auth = auth;
  }

  /** Declares the kinds of plugin `owner`; a kind another plugin declared is refused. */
  declare(owner: string, kinds: readonly string[]): void {
    for (const kind of kinds) {
      const holder = this.declared.get(kind);
      if (holder !== undefined) throw new InvalidArgumentError(`control kind '${kind}' is declared by both '${holder}' and '${owner}'`);
    }
    for (const kind of kinds) this.declared.set(kind, owner);
  }

  /** Registers the handler of messages of kind `kind`, which must be declared and not handled yet. */
  on(kind: string, handler: ControlHandler): void {
    this.checkDeclared(kind);
    if (this.handlers.has(kind)) throw new InvalidArgumentError(`control kind '${kind}' already has a handler`);
    this.handlers.set(kind, handler);
  }

  /** Starts listening on this worker's control subject. */
  listen(): void {
    // Only this worker serves its control subject: acknowledged messages (RRef protocol, status) may come direct.
    const transport = this.transport;
    const handler = (m: InboundMessage) => this.dispatch(m);
    this.subscription = hasSinks(transport) ? transport.subscribe(controlSubject(this.name), handler, { exclusive: true }) : transport.subscribe(controlSubject(this.name), handler);
  }

  /** Sends a control message to `worker` without waiting. */
  send(worker: string, message: ControlMessage): void {
    this.transport.publish(controlSubject(worker), this.encode(worker, message));
  }

  /** Sends a control message to `worker` and decodes its reply. */
  async request(worker: string, message: ControlMessage, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    const reply = await this.transport.request(controlSubject(worker), this.encode(worker, message), { timeoutMs, signal });
    return decodeWithoutTensors(reply);
  }

  close(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }

  private checkDeclared(kind: string): void {
    if (!this.declared.has(kind)) throw new InvalidArgumentError(`control kind '${kind}' is declared by no protocol plugin`);
  }

  private encode(worker: string, message: ControlMessage): Uint8Array {
    // A mistyped kind fails here, where it is sent, not as a silent drop on the receiver.
    this.checkDeclared(message.k);
    // Traced (observe/): an RRef message carries its span's traceparent.
    const bytes = defaultCodec.encode(observing.tracing ? traceSentControl(this.name, worker, message) : message);
    if (!this.auth) return bytes;
    // msgpack `bin` either way: Node's encoder makes it of a Buffer, a page's (no Buffer) of a Uint8Array.
    const body = typeof Buffer === 'function' ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : bytes;
    return defaultCodec.encode([ENVELOPE, body, this.name, this.auth.seal(worker, CONTROL_KIND, '', body)]);
  }

  private dispatch(inbound: InboundMessage): void {
    let message: ControlMessage;
    let sender: CallerIdentity | undefined;
    try {
      let decoded = decodeWithoutTensors(inbound.data);
      if (Array.isArray(decoded) && decoded[0] === ENVELOPE) {
        const [, body, from, auth] = decoded as [string, unknown, unknown, unknown];
        if (!(body instanceof Uint8Array) || !isWorkerName(from)) throw new Error('malformed envelope');
        sender = { name: from, verified: this.auth?.check(from, CONTROL_KIND, '', auth, body) ?? false, ...(inbound.origin === undefined ? {} : { origin: inbound.origin }) };
        decoded = decodeWithoutTensors(body);
      }
      message = decoded as ControlMessage;
      if (typeof message !== 'object' || message === null || typeof message.k !== 'string') throw new Error('no kind');
    } catch {
      this.malformed++;
      return;
    }
    const handler = this.handlers.get(message.k);
    if (!handler) {
      // A kind this worker does not know (a newer peer, a typo on its side): refused, said so when asked.
      this.malformed++;
      const refusal = new InvalidArgumentError(`worker '${this.name}' handles no control messages of kind '${message.k.slice(0, 64)}'`);
      try {
        if (inbound.reply) inbound.respond(defaultCodec.encode({ error: errorToWire(refusal) }));
      } catch {
        // Nobody to tell (the transport is closing).
      }
      return;
    }
    // Handled at once, in the order the bus delivered them: a `here` that came before a call has
    // made its sender known when the call is checked (call-auth.ts).
    let result: unknown;
    try {
      result = observing.tracing ? traceHandledControl(this.name, message, sender?.name, () => handler(message, sender)) : handler(message, sender);
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
