// sh-sched.mjs caller|callee — same-host 4 MB calls in blocks after pauses; per call: wall, and each process's on-CPU and runqueue-wait time (schedstat, all threads)
const { natsTransport } = await import(process.env.TB_NT ?? '../packages/nats-transport/dist/src/index.js');
import { initRpc, remoteFunction } from '../packages/actors/dist/src/index.js';
import { tf } from '../packages/core/dist/src/index.js';
import { readFileSync, readdirSync } from 'node:fs';
const identity = remoteFunction('bench.identity', (x) => x);
const [role] = process.argv.slice(2);
const agent = await initRpc({ name: role, transport: natsTransport({ servers: 'nats://127.0.0.1:4334', name: role }), rpcTimeoutMs: 60000 });
function sched(pid) {
  let run = 0, wait = 0, per = [];
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try { const [a, b] = readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ').map(Number); run += a; wait += b; per.push([t, a, b]); } catch {}
  }
  return { run, wait, per };
}
function cpuOf(pid) { return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[36]; }
if (role === 'callee') { console.log('callee up'); process.on('SIGTERM', async () => { await agent.shutdown({ timeoutMs: 2000 }).catch(() => {}); (await import('node:fs')).writeFileSync('/tmp/s19/mk-callee.json', JSON.stringify(globalThis.__mk ?? [])); process.exit(0); }); }
else {
  const callee = Number(process.env.CALLEE_PID);
  const x = tf.zeros([1 << 20]);
  const call = async () => {
    const a0 = sched(process.pid), b0 = sched(callee);
    globalThis.__mk?.push(['c:start', Number(process.hrtime.bigint()) / 1e9]); const t0 = performance.now(); const y = await agent.rpcSync('callee', identity, [x]); const t = performance.now() - t0; y.dispose(); globalThis.__mk?.push(['c:end', Number(process.hrtime.bigint()) / 1e9]);
    const a1 = sched(process.pid), b1 = sched(callee);
    const threads = (s0, s1) => s1.per.map(([t, r, w], i) => { const o = s0.per.find((p) => p[0] === t); return o ? [(r - o[1]) / 1e6, (w - o[2]) / 1e6] : [0, 0]; }).filter(([r]) => r > 0.05).map(([r, w]) => `${r.toFixed(2)}/${w.toFixed(2)}`).join(',');
    return { t, cr: (a1.run - a0.run) / 1e6, cw: (a1.wait - a0.wait) / 1e6, sr: (b1.run - b0.run) / 1e6, sw: (b1.wait - b0.wait) / 1e6, cpus: cpuOf(process.pid) + cpuOf(callee), ct: threads(a0, a1), st: threads(b0, b1) };
  };
  for (let i = 0; i < Number(process.env.WARM ?? 300); i++) await call();
  const all = [];
  for (let b = 0; b < Number(process.env.BLOCKS ?? 4); b++) {
    await new Promise((r) => setTimeout(r, Number(process.env.PAUSE ?? 900)));
    console.log(`-- block ${b} at ${(Number(process.hrtime.bigint()) / 1e9).toFixed(6)}`);
    for (let i = 0; i < 10; i++) { const s = await call(); all.push(s.t); console.log(`${s.t.toFixed(2)} caller run ${s.cr.toFixed(2)} wait ${s.cw.toFixed(2)} [${s.ct}] | callee run ${s.sr.toFixed(2)} wait ${s.sw.toFixed(2)} [${s.st}] cpus ${s.cpus}`); }
  }
  all.sort((a, b) => a - b); console.log('median', all[all.length >> 1].toFixed(2));
  (await import('node:fs')).writeFileSync('/tmp/s19/mk-caller.json', JSON.stringify(globalThis.__mk ?? []));
  await agent.shutdown({ timeoutMs: 2000 }).catch(() => {});
  process.exit(0);
}
