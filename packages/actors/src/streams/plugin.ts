/**
 * The streams plugin (beyond PyTorch): `agent.rpcStream` on the caller, the
 * producers on the callee, credit and cancellation over the control channel
 * (stream-protocol.ts).
 * @module
 */
import type { ShutdownError } from '@tensorbus/core';
import { departureReason, PluginKey, type AgentHost, type PluginLifecycle, type ProtocolPlugin } from '../agent/host.js';
import { StreamConsumers } from './stream-consumer.js';
import { StreamProducers } from './stream-producer.js';
import { STREAM_CONTROL_KINDS } from './stream-protocol.js';

/** Both sides of one worker's streams. */
export class Streams implements PluginLifecycle {
  readonly consumers: StreamConsumers;
  readonly producers: StreamProducers;

  constructor(host: AgentHost) {
    this.consumers = new StreamConsumers(host);
    this.producers = new StreamProducers(host);
    host.serveStreams((request, produce, caller, ended) => this.producers.start(request, produce, caller, ended));
    host.members.gone$.subscribe(({ name, reason }) => {
      this.consumers.producerGone(name, departureReason(reason, host.options.failureTimeoutMs));
      this.producers.cancelFor(name);
    });
  }

  /** Streams produced here are outstanding work for graceful shutdown. */
  busy(): number {
    return this.producers.active;
  }

  stopping(error: ShutdownError): void {
    this.consumers.failAll(error);
    this.producers.cancelAll();
  }
}

/** The key of a worker's {@link Streams}. */
export const STREAMS = new PluginKey<Streams>('streams');

/** Streaming results. */
export const streamsPlugin: ProtocolPlugin<Streams> = {
  key: STREAMS,
  kinds: STREAM_CONTROL_KINDS,
  functions: [],
  install: (host) => new Streams(host),
};
