/**
 * Subject names of the protocols. The transport adds the namespace prefix.
 * @module
 */

/** Calls to worker `name` (request/reply). */
export const callSubject = (name: string): string => `tb.call.${name}`;
/** Control messages to worker `name`: ping, shutdown status, stream credit, RRef messages. */
export const controlSubject = (name: string): string => `tb.ctl.${name}`;
/** Membership announcements: hello, heartbeat, goodbye, query. */
export const MEMBERS_SUBJECT = 'tb.members';
/** Items of stream `id` opened by worker `caller`. */
export const streamSubject = (caller: string, id: number): string => `tb.stream.${caller}.${id}`;
