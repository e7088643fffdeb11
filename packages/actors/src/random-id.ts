/**
 * Unguessable ids: 128 bits from the operating system's CSPRNG for every id
 * (autograd contexts and messages, RRefs and forks), never a fixed prefix and
 * a counter. Ids are looked up by peers, so one that could be guessed would
 * name another worker's state; knowing an id still grants nothing by itself
 * (protocols check who asks), but an id never seen cannot even be named.
 * @module
 */
import { fillRandom, toBase64url } from './platform/crypto.js';

/** Random bits in every id. */
export const RANDOM_ID_BITS = 128;
const ID_BYTES = RANDOM_ID_BITS / 8;
/** Ids drawn per refill of the pool (one system call for many ids: contexts tag every call). */
const POOLED_IDS = 256;

const pool = new Uint8Array(ID_BYTES * POOLED_IDS);
let next = POOLED_IDS;

/** 128 fresh random bits as 22 base64url characters (each id's bytes are used once). */
export function randomIdPart(): string {
  if (next === POOLED_IDS) {
    fillRandom(pool);
    next = 0;
  }
  const start = ID_BYTES * next++;
  return toBase64url(pool.subarray(start, start + ID_BYTES));
}
