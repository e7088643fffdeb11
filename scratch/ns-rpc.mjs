const { natsTransport } = await import(process.env.TB_NT ?? "../packages/nats-transport/dist/src/index.js");
import { initRpc, remoteFunction } from '../packages/actors/dist/src/index.js';
import * as tf from '@tensorflow/tfjs';
const identity = remoteFunction('bench.identity', (x) => x);
const [role, nStr = '300', bytesStr = '4194304'] = process.argv.slice(2);
const host = role === 'callee' ? '10.213.9.2' : '10.213.9.1';
const agent = await initRpc({ name: role, transport: natsTransport({ servers: 'nats://10.213.9.1:4333', name: role, direct: { host, lanes: Number(process.env.LANES ?? 8) } }), rpcTimeoutMs: 60000 });
if (role === 'callee') { console.log('callee up'); process.on('SIGTERM', async () => { console.log("ahead", globalThis.__ahead, "used", globalThis.__aheadUsed, "callee reads", globalThis.__reads, "bytes", globalThis.__readBytes, "striped", globalThis.__striped, "staged", globalThis.__staged, globalThis.__stagedB); await agent.shutdown({ timeoutMs: 2000 }).catch(() => {}); process.exit(0); }); }
else {
  const x = tf.zeros([Number(bytesStr) / 4]);
  const N = Number(nStr), times = [];
  for (let i = 0; i < N; i++) { const t0 = performance.now(); const y = await agent.rpcSync('callee', identity, [x]); times.push(performance.now() - t0); y.dispose(); }
  const blocks = []; const B = Number(process.env.BLOCK ?? 100); for (let b = 0; b < N; b += B) { const s = times.slice(b, b + B).sort((a, b) => a - b); blocks.push(s[s.length >> 1].toFixed(2)); }
  console.log("block medians", blocks.join(" ")); const med = (a) => { a = a.slice(100).sort((x, y) => x - y); return a[a.length >> 1]?.toFixed(3); }; console.log("ahead", globalThis.__ahead, "used", globalThis.__aheadUsed, "reads", globalThis.__reads, "bytes", globalThis.__readBytes, "striped", globalThis.__striped, "staged", globalThis.__staged, globalThis.__stagedB); if (globalThis.__tg) { const bm = (a) => { const o = []; for (let b = 0; b < a.length; b += 50) { const s = a.slice(b, b + 50).sort((x, y) => x - y); o.push(s[s.length >> 1].toFixed(2)); } return o.join(" "); }; console.log("GET after", bm(globalThis.__tg)); console.log("reply after", bm(globalThis.__tr)); console.log("served after", bm(globalThis.__ts)); }
  const t = times.slice(100).sort((a, b) => a - b);
  console.log(`median ${t[t.length >> 1].toFixed(2)} p25 ${t[t.length >> 2].toFixed(2)} ms`, JSON.stringify(agent.transport?.directStats ?? {}));
  await agent.shutdown({ timeoutMs: 2000 }).catch(() => {});
  process.exit(0);
}
