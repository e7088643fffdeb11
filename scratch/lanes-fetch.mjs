// lanes-fetch.mjs server|client LANES N — fetch a 4 MB offer between the namespaces through DirectServer/DirectClient
import { DirectServer } from '../packages/nats-transport/dist/src/direct/direct-server.js';
import { DirectClient } from '../packages/nats-transport/dist/src/direct/direct-client.js';
import { parseOffer } from '../packages/nats-transport/dist/src/direct/direct-protocol.js';
import { Frame } from '../packages/core/dist/src/index.js';
import { writeFileSync, readFileSync } from 'node:fs';
const [role, lanesStr = '8', nStr = '400', sizeStr = '4194304'] = process.argv.slice(2);
if (role === 'server') {
  const server = await DirectServer.start({ host: '10.213.9.2' });
  const offered = server.offer(Frame.of(new Uint8Array(+sizeStr).fill(5)));
  writeFileSync('/tmp/s15/offer', offered.header);
  setInterval(() => {}, 1000);
} else {
  const client = new DirectClient(10_000, 0, +lanesStr);
  const offer = parseOffer(readFileSync('/tmp/s15/offer', 'utf8'));
  const keep = setInterval(() => {}, 1000); const N = +nStr, times = [];
  for (let i = 0; i < N; i++) { const t0 = performance.now(); const f = await client.fetch(offer, +sizeStr); times.push(performance.now() - t0); f.release(); }
  const blocks = []; for (let b = 0; b < N; b += 100) { const s = times.slice(b, b + 100).sort((a, b) => a - b); blocks.push(s[s.length >> 1].toFixed(2)); }
  console.log(`lanes=${lanesStr} fetch blocks ${blocks.join(' ')} striped ${client.striped}`);
  process.exit(0);
}
