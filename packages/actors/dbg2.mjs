import { startAgent, hostOf } from './dist/src/internal.js';
import { natsTransport } from '../nats-transport/dist/src/index.js';
import { sharedNatsServer } from '../nats-transport/dist/src/testing/index.js';
const server = await sharedNatsServer();
for (let i = 0; i < 10; i++) {
  const ns = `d${process.pid}x${i}`;
  const t0 = Date.now();
  const timer = setTimeout(() => console.log('stuck', i), 10000);
  const agents = await Promise.all(['a', 'b'].map((name) => startAgent({ name, transport: natsTransport({ servers: server.url, namespace: ns }), heartbeatMs: 100, failureTimeoutMs: 600 }, [])));
  console.log(i, 'started in', Date.now() - t0);
  clearTimeout(timer);
  await Promise.all(agents.map((a) => a.shutdown({ graceful: false })));
}
process.exit(0);
