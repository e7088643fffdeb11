// ns-ab.mjs caller|callee — A/B inside one pair of processes: blocks alternate with globalThis.__noAhead on and off
const { natsTransport } = await import(process.env.TB_NT ?? "../packages/nats-transport/dist/src/index.js");
import { initRpc, remoteFunction } from '../packages/actors/dist/src/index.js';
import * as tf from '@tensorflow/tfjs';
const identity = remoteFunction('bench.identity', (x) => x);
const [role] = process.argv.slice(2);
const host = role === 'callee' ? '10.213.9.2' : '10.213.9.1';
const agent = await initRpc({ name: role, transport: natsTransport({ servers: 'nats://10.213.9.1:4333', name: role, direct: { host } }), rpcTimeoutMs: 60000 });
if (role === 'callee') { console.log('callee up'); process.on('SIGTERM', async () => { await agent.shutdown({ timeoutMs: 2000 }).catch(() => {}); process.exit(0); }); }
else {
  const x = tf.zeros([1 << 20]);
  const run = async (n) => { const t = []; for (let i = 0; i < n; i++) { const t0 = performance.now(); const y = await agent.rpcSync('callee', identity, [x]); t.push(performance.now() - t0); y.dispose(); } return t; };
  await run(Number(process.env.WARM ?? 300));
  const res = { on: [], off: [] };
  for (let b = 0; b < 20; b++) { const off = b % 2 === 1; globalThis.__noAhead = off; const t = await run(40); res[off ? 'off' : 'on'].push(...t.slice(2)); }
  const med = (a) => { a = [...a].sort((x, y) => x - y); return a[a.length >> 1].toFixed(3); };
  const p25 = (a) => { a = [...a].sort((x, y) => x - y); return a[a.length >> 2].toFixed(3); };
  console.log(`ahead on: median ${med(res.on)} p25 ${p25(res.on)} | off: median ${med(res.off)} p25 ${p25(res.off)}`);
  await agent.shutdown({ timeoutMs: 2000 }).catch(() => {});
  process.exit(0);
}
