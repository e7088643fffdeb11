/**
 * The stream protocol (beyond PyTorch): a STREAM call opens it; items flow on
 * the caller's stream subject; the caller grants credit and may cancel through
 * the callee's control subject.
 *
 *   caller -> callee  request  [STREAM, fn, args, meta, { id, subject, credit }] -> [OK, null] | [ERROR, e]
 *   callee -> caller  publish  [ITEM, seq, value] ... [END, seq] | [FAIL, seq, WireError]
 *   caller -> callee  control  { k: STREAM_CREDIT, caller, id, n } | { k: STREAM_CANCEL, caller, id }
 *
 * The callee never has more than the granted credit of items unacknowledged, so
 * a slow subscriber slows the producer; items carry sequence numbers so a lost
 * one fails the stream instead of silently skipping.
 * @module
 */

export const ITEM = 0;
export const END = 1;
export const FAIL = 2;

/** Items a consumer lets the producer send ahead. */
export const DEFAULT_STREAM_CREDIT = 16;
/** Items an Observable producer may get ahead of credit before the stream fails. */
export const MAX_OBSERVABLE_BUFFER = 1024;

/** Key of a stream on the callee. */
export const streamKey = (caller: string, id: number): string => `${caller}#${id}`;

/** Control kind: the consumer grants `n` more items. */
export const STREAM_CREDIT = 'scredit';
/** Control kind: the consumer cancels the stream. */
export const STREAM_CANCEL = 'scancel';
/** The control kinds the streams plugin declares. */
export const STREAM_CONTROL_KINDS = [STREAM_CREDIT, STREAM_CANCEL] as const;
