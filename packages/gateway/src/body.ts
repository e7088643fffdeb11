/**
 * Reading a request body within its limit: a declared length past the limit
 * is refused before a byte is read, and an undeclared (chunked) one as soon
 * as the bytes read pass it, so a body is never buffered beyond the limit;
 * a body that takes longer than its time is refused too (a slow client holds
 * a connection, never a slot). The bytes a body holds count against the
 * gateway's budget of bodies in flight (body-budget.ts) from when they are
 * declared or arrive.
 * @module
 */
import type { IncomingMessage } from 'node:http';
import { GatewayError } from './errors.js';
import type { BodyHold } from './body-budget.js';

/**
 * The body of `request`, at most `maxBytes`, all of it within `timeoutMs`,
 * its bytes held in `hold` (a declared length before a byte is read);
 * GATEWAY_LIMIT_EXCEEDED past either, BodiesBusyError past the budget,
 * GATEWAY_BAD_REQUEST for a compressed one.
 */
export function readBody(request: IncomingMessage, maxBytes: number, timeoutMs: number, hold: BodyHold): Promise<Buffer> {
  const tooLarge = () => new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request body is larger than ${maxBytes} bytes`);
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined && encoding !== 'identity') return Promise.reject(new GatewayError('GATEWAY_BAD_REQUEST', 'compressed request bodies are not accepted'));
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(tooLarge());
  let held = 0;
  if (Number.isSafeInteger(declared) && declared > 0) {
    try {
      hold.grow(declared);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    held = declared;
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const timer = setTimeout(() => finish(new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request body did not arrive within ${timeoutMs} ms`)), timeoutMs);
    const finish = (error: Error | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      request.off('data', onData);
      if (error) {
        // Stop reading: what else comes is dropped, not kept.
        request.resume();
        reject(error);
      } else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return finish(tooLarge());
      if (size > held) {
        try {
          hold.grow(size - held);
        } catch (error) {
          return finish(error as Error);
        }
        held = size;
      }
      chunks.push(chunk);
    };
    request.on('data', onData);
    request.once('end', () => finish(undefined));
    request.once('error', (error) => finish(error));
    request.once('aborted', () => finish(new GatewayError('GATEWAY_BAD_REQUEST', 'the client went away while sending the body')));
  });
}
