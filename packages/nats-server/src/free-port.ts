/**
 * Free TCP ports on the loopback interface.
 * @module
 */
import { createServer, createConnection, type AddressInfo, type Server } from 'node:net';

/** A TCP port on 127.0.0.1 that nothing listens on now. */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/** `n` distinct TCP ports on 127.0.0.1 that nothing listens on now: each is held until all are known, then all are let go. */
export async function freePorts(n: number): Promise<number[]> {
  const held: Server[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const server = createServer();
      held.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', resolve);
      });
    }
    return held.map((server) => (server.address() as AddressInfo).port);
  } finally {
    await Promise.all(held.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/** Resolves once something accepts connections on 127.0.0.1:`port`, or rejects after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs: number, alive: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!alive()) throw new Error('the process exited before it listened');
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        // A port in the ephemeral range nobody listens on yet can connect to itself (TCP
        // simultaneous open, when the kernel picks that same port as the source): not a listener.
        const self = socket.localPort === port;
        socket.destroy();
        resolve(!self);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`nothing listened on 127.0.0.1:${port} within ${timeoutMs} ms`);
}
