/**
 * `tensorbus gateway` (the `@tensorbus/gateway/cli` entry): runs
 * `startGateway` from the command line until SIGINT or SIGTERM, reading the
 * TLS files and the auth file it names. The `tensorbus` command of
 * `@tensorbus/actors` parses the arguments and loads this module when it runs.
 * @module
 */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from '@tensorbus/core';
import { startGateway } from './start.js';
import type { GatewayOptions } from './options.js';
import type { GatewayAuth } from './auth.js';
import { untilSignal, type GatewayArgs, type GatewayCommandModule } from '@tensorbus/actors/internal';

/** What an `--auth` file holds. */
interface AuthFile extends GatewayAuth {
  identities?: GatewayOptions['identities'];
}

function readAuthFile(path: string): AuthFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new InvalidArgumentError(`--auth ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new InvalidArgumentError(`--auth ${path}: expected a JSON object { basic, jwt, identities }`);
  return parsed as AuthFile;
}

/** Runs the gateway; resolves with the exit code once it was stopped by a signal. */
export const gatewayCommand: GatewayCommandModule['gatewayCommand'] = async (args: GatewayArgs): Promise<number> => {
  const auth = args.auth === undefined ? undefined : readAuthFile(args.auth);
  const gw = await startGateway({
    namespace: args.namespace,
    port: args.port,
    host: args.host,
    nats: args.server,
    name: args.name,
    tls: args.tlsCert !== undefined && args.tlsKey !== undefined ? { cert: readFileSync(args.tlsCert), key: readFileSync(args.tlsKey) } : undefined,
    // An auth file without users or JWT configures nothing: resolveGatewayOptions refuses it.
    auth: auth && { basic: auth.basic, jwt: auth.jwt },
    identities: auth?.identities,
  });
  // Said whatever TENSORBUS_QUIET says: who can reach the gateway is not a detail.
  process.stdout.write(`${gw.url}\n${gw.authenticated ? 'clients must authenticate' : 'no auth configured: listening on loopback only'}\n`);
  await untilSignal();
  await gw.close();
  return 0;
};
