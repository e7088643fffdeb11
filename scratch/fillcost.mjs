import { SharedSegments } from '../packages/nats-transport/dist/src/shm/shared-segments.js';
import { loadShm } from '../packages/nats-transport/dist/src/shm/shm-native.js';
import { placeFilling } from '../packages/nats-transport/dist/src/shm/filling.js';
import { useBufferSource } from '../packages/core/dist/src/internal.js';
import { defaultCodec, tf } from '../packages/core/dist/src/index.js';
const segs = new SharedSegments(loadShm().binding); useBufferSource(segs);
const x = tf.zeros([1 << 20]);
const enc = [], fil = [], dec = [];
for (let i = 0; i < 300; i++) {
  const a = performance.now();
  const payload = defaultCodec.encodeOutgoing([1, 'f', [x], {}], {});
  const b = performance.now();
  const f = placeFilling(segs, payload); const b2 = performance.now(); f.fill(); (globalThis.pl ??= []).push(b2 - b);
  const c = performance.now();
  const d = defaultCodec.decoder(f.ref.length, {}); const src = f.frame.bytes.subarray(0, f.ref.length);
  for (let at = 0; at < src.length;) { const t = d.target(); const n = Math.min(t.byteLength, src.length - at); t.set(src.subarray(at, at + n)); d.advance(n); at += n; }
  const y = d.result(); 
  const e = performance.now();
  f.frame.release(); payload.release?.(); tf.dispose(y);
  enc.push(b - a); fil.push(c - b); dec.push(e - c);
}
const m = (a) => (a.sort((p, q) => p - q)[150] * 1000).toFixed(0);
console.log('place only', m(globalThis.pl)); console.log('encodeOutgoing', m(enc), 'µs; place+fill', m(fil), 'µs; decode via sink', m(dec), 'µs; tensors', tf.memory().numTensors);
