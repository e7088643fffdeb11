/**
 * Who is who in the federation, as the shipped `nats-server.conf` declares
 * it: the worker names, the NATS user of each (one account each), the
 * namespace of the tensorbus subjects, and where each user's password comes
 * from. The config file is read from the source folder (tsc does not copy it);
 * the browser mode writes the same accounts for any list of clients.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { NAMESPACE, SERVER_NAME } from './names.js';

export { NAMESPACE, SERVER_NAME } from './names.js';

/** The clients' worker names and NATS users (accounts CLIENT1..3). */
export const CLIENT_NAMES = ['client1', 'client2', 'client3'] as const;

/** The environment variable the config file reads `user`'s password from. */
function passwordVariable(user: string): string {
  return `FED_${user.toUpperCase()}_PASS`;
}

/**
 * New random passwords for the server and every client, by user. nats-server
 * parses a variable's value as config text, so a password is a letter and hex
 * digits: never read as a number, a date or a keyword.
 */
export function generatePasswords(users: readonly string[] = [SERVER_NAME, ...CLIENT_NAMES]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const user of users) out[user] = `p${randomBytes(16).toString('hex')}`;
  return out;
}

/** The environment that gives the nats-server every password. */
export function serverEnvironment(passwords: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(passwords).map(([user, pass]) => [passwordVariable(user), pass]));
}

/** The path of the shipped `nats-server.conf` (next to this file in src, or found from dist). */
export function configFilePath(): string {
  const candidates = [new URL('./nats-server.conf', import.meta.url), new URL('../../../src/federated/nats-server.conf', import.meta.url)];
  for (const url of candidates) {
    const path = fileURLToPath(url);
    if (existsSync(path)) return path;
  }
  throw new Error(`nats-server.conf not found next to ${fileURLToPath(import.meta.url)} nor in packages/examples/src/federated`);
}

/**
 * The text of a nats-server config with the shipped file's accounts for any
 * list of clients: SERVER exports its worker's call subject as a service,
 * each client's account (named after the client, upper case) imports it and
 * nothing else. Passwords come from the environment, as in the shipped file.
 * Names go into the config text, so only plain lower-case names are taken.
 */
export function accountsConfig(clients: readonly string[]): string {
  const bad = clients.find((client) => !/^[a-z][a-z0-9]{0,31}$/.test(client) || client === SERVER_NAME);
  if (bad !== undefined) throw new RangeError(`a client name is a lower-case letter and up to 31 letters and digits, not '${SERVER_NAME}': got '${bad}'`);
  const subject = `${NAMESPACE}.tb.call.${SERVER_NAME}`;
  const account = (user: string, rest: string) => `  ${user.toUpperCase()}: {\n    users: [ { user: ${user}, password: $${passwordVariable(user)} } ]\n    ${rest}\n  }`;
  const blocks = [
    account(SERVER_NAME, `exports: [ { service: "${subject}", response_type: singleton } ]`),
    ...clients.map((client) => account(client, `imports: [ { service: { account: ${SERVER_NAME.toUpperCase()}, subject: "${subject}" } } ]`)),
  ];
  return `accounts {\n${blocks.join('\n')}\n}\n`;
}
