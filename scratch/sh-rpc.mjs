const { natsTransport } = await import(process.env.TB_NT ?? '../packages/nats-transport/dist/src/index.js');
import { initRpc, remoteFunction } from '../packages/actors/dist/src/index.js';
import { tf } from '../packages/core/dist/src/index.js';
const identity = remoteFunction('bench.identity', (x) => x);
const [role, nStr = '300', bytesStr = '4194304'] = process.argv.slice(2);
const agent = await initRpc({ name: role, transport: natsTransport({ servers: 'nats://127.0.0.1:4334', name: role }), rpcTimeoutMs: 60000 });
if (role === 'callee') { console.log('callee up'); process.on('SIGTERM', async () => { const f1 = process.resourceUsage(); if (process.env.TRACE) (await import('node:fs')).writeFileSync('/tmp/s17/trace-callee.json', JSON.stringify(globalThis.__tb ?? [])); console.log('callee totals: minflt', f1.minorPageFault, 'user ms', f1.userCPUTime / 1000, 'sys ms', f1.systemCPUTime / 1000, 'vol cs', f1.voluntaryContextSwitches); await agent.shutdown({ timeoutMs: 2000 }).catch(() => {}); process.exit(0); }); }
else {
  const x = tf.zeros([Number(bytesStr) / 4]);
  const N = Number(nStr), times = []; const f0 = process.resourceUsage();
  const flt = []; for (let i = 0; i < N; i++) { const r0 = process.resourceUsage().minorPageFault; (globalThis.__tb ??= []).push(['c.start', performance.timeOrigin + performance.now()]); const t0 = performance.now(); const y = await agent.rpcSync('callee', identity, [x]); times.push(performance.now() - t0); (globalThis.__tb ??= []).push(['c.end', performance.timeOrigin + performance.now()]); y.dispose(); flt.push(process.resourceUsage().minorPageFault - r0); }
  if (process.env.EARLY) console.log('early', times.slice(0, 60).map((t, i) => `${t.toFixed(1)}/${flt[i]}`).join(' '));
  const blocks = []; const B = Number(process.env.BLOCK ?? 100); for (let b = 0; b < N; b += B) { const s = times.slice(b, b + B).sort((a, b) => a - b); blocks.push(s[s.length >> 1].toFixed(2)); }
  { const f1 = process.resourceUsage(); console.log('caller per call: minflt', ((f1.minorPageFault - f0.minorPageFault) / N).toFixed(1), 'user ms', ((f1.userCPUTime - f0.userCPUTime) / N / 1000).toFixed(3), 'sys ms', ((f1.systemCPUTime - f0.systemCPUTime) / N / 1000).toFixed(3), 'vol cs', ((f1.voluntaryContextSwitches - f0.voluntaryContextSwitches) / N).toFixed(1)); }
  console.log('block medians', blocks.join(' '));
  const t = times.slice(20).sort((a, b) => a - b);
  console.log(`median ${t[t.length >> 1].toFixed(2)} p10 ${t[Math.floor(t.length / 10)].toFixed(2)} p90 ${t[Math.floor(t.length * 0.9)].toFixed(2)} ms`);
  if (process.env.TRACE) (await import('node:fs')).writeFileSync('/tmp/s17/trace-caller.json', JSON.stringify(globalThis.__tb));
  await agent.shutdown({ timeoutMs: 2000 }).catch(() => {});
  process.exit(0);
}
