/**
 * The subjects the NATS transport hands to the nats client. The client writes
 * a subject into a protocol line as it is (`PUB <subject> <reply> <size>`), so
 * a space, CR or LF in one would end the line early and let the rest be read
 * by the server as commands of this connection (UNSUB, PUB, SUB). Every
 * subject is checked once, where it enters: the caller's subjects in
 * nats-transport.ts (namespace, inbox prefix, request/publish/subscribe
 * subjects), a sender's reply subject before it is answered, a chunked
 * transfer's pull subject in chunks/chunk-receiver.ts and a receiver's chunk
 * subject in chunks/chunk-sender.ts. Inboxes made from a checked prefix need
 * no second look.
 * @module
 */
import { InvalidArgumentError } from '@tensorbus/core';

/** Longest subject accepted, in characters (reply inboxes and namespaces included). */
export const MAX_SUBJECT_LENGTH = 1024;

// Printable ASCII other than space; '.' separates tokens (checked per token below).
const TOKEN = /^[\x21-\x2d\x2f-\x7e]+$/;

/**
 * Throws {@link InvalidArgumentError} unless `subject` is a NATS subject that
 * cannot be read as more than one protocol line: 1 to {@link MAX_SUBJECT_LENGTH}
 * printable ASCII characters without spaces, dot-separated tokens none of them
 * empty. Wildcard tokens (`*`, `>` last) are allowed only with `wildcards`
 * (a subscription's subject).
 */
export function checkSubject(subject: unknown, role: 'subject' | 'reply subject', { wildcards = false }: { wildcards?: boolean } = {}): asserts subject is string {
  const bad = (why: string): never => {
    throw new InvalidArgumentError(`invalid NATS ${role} ${JSON.stringify(typeof subject === 'string' ? subject.slice(0, 200) : subject)}: ${why}`);
  };
  if (typeof subject !== 'string' || subject.length === 0) bad('it is empty');
  const text = subject as string;
  if (text.length > MAX_SUBJECT_LENGTH) bad(`longer than ${MAX_SUBJECT_LENGTH} characters`);
  const tokens = text.split('.');
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.length === 0) bad('it has an empty token');
    if (!TOKEN.test(token)) bad('only printable ASCII without spaces or control characters is allowed');
    if (!wildcards && (token === '*' || token === '>')) bad('wildcards are not allowed here');
    if (token === '>' && i !== tokens.length - 1) bad("'>' must be the last token");
  }
}

/** True when `subject` passes {@link checkSubject}. */
export function isValidSubject(subject: unknown, { wildcards = false }: { wildcards?: boolean } = {}): boolean {
  try {
    checkSubject(subject, 'subject', { wildcards });
    return true;
  } catch {
    return false;
  }
}
