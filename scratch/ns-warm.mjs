// ns-warm.mjs caller|callee — what warms up: same connections after a pause, or new connections in a warm process
const { natsTransport } = await import(process.env.TB_NT ?? "../packages/nats-transport/dist/src/index.js");
import { initRpc, remoteFunction } from '../packages/actors/dist/src/index.js';
import * as tf from '@tensorflow/tfjs';
const identity = remoteFunction('bench.identity', (x) => x);
const [role] = process.argv.slice(2);
const host = role === 'callee' ? '10.213.9.2' : '10.213.9.1';
const mk = (name) => initRpc({ name, transport: natsTransport({ servers: 'nats://10.213.9.1:4333', name, direct: { host } }), rpcTimeoutMs: 60000 });
if (role === 'callee') { const agent = await mk('callee'); console.log('callee up'); process.on('SIGTERM', async () => { await agent.shutdown({ timeoutMs: 2000 }).catch(() => {}); process.exit(0); }); }
else {
  const x = tf.zeros([1 << 20]);
  const run = async (agent, N, label) => {
    const times = [];
    for (let i = 0; i < N; i++) { const t0 = performance.now(); const y = await agent.rpcSync('callee', identity, [x]); times.push(performance.now() - t0); y.dispose(); }
    const blocks = []; for (let b = 0; b < N; b += 50) { const s = times.slice(b, b + 50).sort((a, b) => a - b); blocks.push(s[s.length >> 1].toFixed(2)); }
    console.log(label, blocks.join(' '));
  };
  let agent = await mk('caller1');
  await run(agent, 400, 'fresh        ');
  await new Promise((r) => setTimeout(r, 1500));
  await run(agent, 150, 'after pause  ');
  await agent.shutdown({ timeoutMs: 2000 }).catch(() => {});
  agent = await mk('caller2');
  await run(agent, 400, 'new transport');
  await agent.shutdown({ timeoutMs: 2000 }).catch(() => {});
  process.exit(0);
}
