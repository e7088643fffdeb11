// ns-jit.mjs caller|callee — does warming the JS with smaller calls remove the 4 MB warm-up?
const { natsTransport } = await import(process.env.TB_NT ?? "../packages/nats-transport/dist/src/index.js");
import { initRpc, remoteFunction } from '../packages/actors/dist/src/index.js';
import * as tf from '@tensorflow/tfjs';
const identity = remoteFunction('bench.identity', (x) => x);
const [role] = process.argv.slice(2);
const host = role === 'callee' ? '10.213.9.2' : '10.213.9.1';
const mk = (name) => initRpc({ name, transport: natsTransport({ servers: 'nats://10.213.9.1:4333', name, direct: { host } }), rpcTimeoutMs: 60000 });
if (role === 'callee') { const agent = await mk('callee'); console.log('callee up'); process.on('SIGTERM', async () => { await agent.shutdown({ timeoutMs: 2000 }).catch(() => {}); process.exit(0); }); }
else {
  const agent = await mk('caller');
  const run = async (bytes, N, label) => {
    const x = tf.zeros([bytes / 4]); const times = [];
    for (let i = 0; i < N; i++) { const t0 = performance.now(); const y = await agent.rpcSync('callee', identity, [x]); times.push(performance.now() - t0); y.dispose(); }
    x.dispose();
    const blocks = []; for (let b = 0; b < N; b += 50) { const s = times.slice(b, b + 50).sort((a, b) => a - b); blocks.push(s[s.length >> 1].toFixed(2)); }
    if (label) console.log(label, blocks.join(' '));
  };
  const warm = process.env.WARM ?? '';
  if (warm) { const [b, n] = warm.split('x').map(Number); const t0 = performance.now(); await run(b, n); console.log('warm', warm, (performance.now() - t0).toFixed(0), 'ms'); }
  await run(4 << 20, 300, '4MB');
  await agent.shutdown({ timeoutMs: 2000 }).catch(() => {});
  process.exit(0);
}
