/**
 * What the raw NATS peer's two processes agree on: the subject the echo
 * responder serves.
 * @module
 */

/** The raw NATS echo responder answers every request on this subject with its payload. */
export const NATS_ECHO_SUBJECT = 'bench.raw.echo';

/** Room kept for the protocol in each message: a payload closer than this to `max_payload` is not sent. */
export const NATS_HEADROOM = 1024;
