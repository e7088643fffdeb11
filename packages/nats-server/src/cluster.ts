/**
 * A cluster of nats-servers on loopback, for scale-out tests.
 * @module
 */
import { freePorts } from './free-port.js';
import { startNatsServer, type NatsServer } from './start-nats-server.js';

/** A running cluster. */
export interface NatsCluster {
  /** Client URLs, one per server. */
  readonly urls: string[];
  readonly servers: NatsServer[];
  stop(): Promise<void>;
}

/**
 * Starts `size` (default 3) nats-servers routed into one cluster, and resolves
 * once every route is up. With `jetstream`, each node keeps a JetStream store
 * of its own and the nodes form one JetStream cluster (replicated streams).
 *
 * @example
 * ```ts
 * const cluster = await startNatsCluster({ size: 3 });
 * const a = await natsTransport({ servers: cluster.urls[0] });
 * const b = await natsTransport({ servers: cluster.urls[2] });
 * ```
 */
export async function startNatsCluster(options: { size?: number; config?: string; jetstream?: boolean } = {}): Promise<NatsCluster> {
  const size = options.size ?? 3;
  // All at once, so no two of them are the same port (each is held until all are known).
  const ports = await freePorts(2 * size);
  const routePorts = ports.slice(0, size);
  const monitorPorts = ports.slice(size);
  const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`);
  const servers = await Promise.all(
    routePorts.map((routePort, i) =>
      startNatsServer({
        jetstream: options.jetstream,
        config: [
          options.config ?? '',
          `server_name: tb-node-${i}`,
          `http: 127.0.0.1:${monitorPorts[i]}`,
          'cluster {',
          '  name: tensorbus',
          `  listen: 127.0.0.1:${routePort}`,
          `  routes: [${routes.filter((_, k) => k !== i).join(', ')}]`,
          '}',
        ].join('\n'),
      }),
    ),
  );
  await waitForRoutes(monitorPorts, size - 1);
  if (options.jetstream) await waitForMetaLeader(monitorPorts);
  return {
    urls: servers.map((s) => s.url),
    servers,
    stop: async () => {
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
}

/** Polls each server's monitoring endpoint until it reports `expected` routes. */
async function waitForRoutes(monitorPorts: number[], expected: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let counts: number[] = [];
  while (Date.now() < deadline) {
    counts = await Promise.all(
      monitorPorts.map(async (port) => {
        try {
          const response = await fetch(`http://127.0.0.1:${port}/routez`);
          const body = (await response.json()) as { num_routes?: number };
          return body.num_routes ?? 0;
        } catch {
          return 0;
        }
      }),
    );
    if (counts.every((n) => n >= expected)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the NATS cluster's routes did not come up within ${timeoutMs} ms: routes per node ${counts.join(', ')} of ${expected} (0 also when a node's monitoring port does not answer)`);
}

/** Polls each server's `/jsz` until every one knows the JetStream cluster's meta leader (streams can be made then). */
async function waitForMetaLeader(monitorPorts: number[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const leaders = await Promise.all(
      monitorPorts.map(async (port) => {
        try {
          const body = (await (await fetch(`http://127.0.0.1:${port}/jsz`)).json()) as { meta_cluster?: { leader?: string } };
          return body.meta_cluster?.leader ?? '';
        } catch {
          return '';
        }
      }),
    );
    if (leaders.every((leader) => leader !== '')) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the NATS cluster's JetStream did not elect a meta leader within ${timeoutMs} ms`);
}
