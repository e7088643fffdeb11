// sh-pause.mjs caller|callee — same-host 4 MB calls in blocks of 10 after pauses in which two CPU hogs run (as other systems' blocks in the bench)
const { natsTransport } = await import(process.env.TB_NT ?? '../packages/nats-transport/dist/src/index.js');
import { initRpc, remoteFunction } from '../packages/actors/dist/src/index.js';
import { tf } from '../packages/core/dist/src/index.js';
import { spawn } from 'node:child_process';
const { busyPoll } = await import((process.env.TB_NT ?? '../packages/nats-transport/dist/src/index.js').replace('index.js', 'direct/busy-poll.js'));
const bpStats = () => JSON.stringify(busyPoll.stats());
const identity = remoteFunction('bench.identity', (x) => x);
const [role] = process.argv.slice(2);
const agent = await initRpc({ name: role, transport: natsTransport({ servers: 'nats://127.0.0.1:4334', name: role }), rpcTimeoutMs: 60000 });
if (role === 'callee') { console.log('callee up'); process.on('SIGTERM', async () => { console.log('callee busy-poll', bpStats()); await agent.shutdown({ timeoutMs: 2000 }).catch(() => {}); process.exit(0); }); }
else {
  const x = tf.zeros([1 << 20]);
  const call = async () => { const t0 = performance.now(); const y = await agent.rpcSync('callee', identity, [x]); const t = performance.now() - t0; y.dispose(); return t; };
  for (let i = 0; i < Number(process.env.WARM ?? 5); i++) await call();
  const all = [];
  for (let b = 0; b < Number(process.env.BLOCKS ?? 6); b++) {
    const hogs = process.env.HOG ? [0, 1].map(() => spawn('node', ['-e', 'const e=Date.now()+800; while(Date.now()<e);'])) : [];
    await new Promise((r) => setTimeout(r, Number(process.env.PAUSE ?? 900)));
    const t = []; for (let i = 0; i < Number(process.env.PER ?? 10); i++) t.push(await call());
    all.push(...t); if (process.env.QUIET !== "1") console.log(t.map((v) => v.toFixed(1)).join(" "));
  }
  all.sort((a, b) => a - b); console.log('median', all[all.length >> 1].toFixed(2), 'p90', all[Math.floor(all.length * 0.9)].toFixed(2));
  console.log('caller busy-poll', bpStats());
  await agent.shutdown({ timeoutMs: 2000 }).catch(() => {});
  process.exit(0);
}
