/**
 * Test helper: do ids carry 128 random bits? Asserted on the ids a worker
 * actually makes, not on their format alone.
 */

/**
 * True when the random parts of `ids` (the text after `prefix`) are 16 bytes
 * of base64url each and every one of their 128 bits takes both values across
 * the ids: ids made from a fixed prefix and a counter keep most bits fixed.
 */
export function everyBitVaries(ids: string[], prefix: string): boolean {
  const seen0 = new Uint8Array(16);
  const seen1 = new Uint8Array(16);
  for (const id of ids) {
    if (!id.startsWith(prefix)) return false;
    const bytes = Buffer.from(id.slice(prefix.length), 'base64url');
    if (bytes.byteLength !== 16 || bytes.toString('base64url') !== id.slice(prefix.length)) return false;
    bytes.forEach((byte, i) => {
      seen1[i]! |= byte;
      seen0[i]! |= ~byte & 0xff;
    });
  }
  return seen0.every((b) => b === 0xff) && seen1.every((b) => b === 0xff);
}
