/**
 * `startGateway`, the public entry of the XML-RPC gateway.
 * @module
 */
import type { GatewayOptions } from './options.js';
import { launchGateway } from './gateway.js';
import type { Gateway } from './running-gateway.js';

export type { Gateway } from './running-gateway.js';

/**
 * Starts an XML-RPC gateway into a namespace: one member agent per NATS
 * identity, then the HTTP(S) server taking `POST /RPC2`. See docs/gateway.md.
 *
 * @example
 * ```ts
 * const gateway = await startGateway({ namespace: 'ns', nats: 'nats://127.0.0.1:4222', port: 8080 });
 * // python3 -c "import xmlrpc.client as x; print(x.ServerProxy('http://127.0.0.1:8080/RPC2').system.listMethods())"
 * await gateway.close();
 * ```
 * @throws InvalidArgumentError on bad options (no auth on a non-loopback host, a user mapped to an unknown identity, ...).
 */
export async function startGateway(options: GatewayOptions = {}): Promise<Gateway> {
  return launchGateway(options);
}
