/**
 * Decentralised (operator/JWT) authentication for tests: the JWTs an operator,
 * its accounts and their users present, signed with nkeys, and the `.creds`
 * text a user connects with. Written from the claim format nats-server reads
 * (JWT v2); enough for `resolver: MEMORY` with `resolver_preload`, not a
 * replacement for `nsc`.
 *
 * @example
 * ```ts
 * const operator = nkeys.createOperator(), system = nkeys.createAccount();
 * const operatorJwt = natsJwt(operator, operator, 'op', { type: 'operator', system_account: system.getPublicKey() });
 * const systemJwt = natsJwt(operator, system, 'SYS', { type: 'account', limits: UNLIMITED_ACCOUNT });
 * const config = operatorConfig(operatorJwt, system.getPublicKey(), [systemJwt]);
 * ```
 * @module
 */
import { createHash } from 'node:crypto';
import { nkeys } from 'nats';

/** An nkey pair (operator, account or user). */
export type KeyPair = ReturnType<typeof nkeys.createPair>;

/** An issuer or subject: a key pair (its public key is used) or a public key. */
type Key = KeyPair | string;

const publicKey = (key: Key): string => (typeof key === 'string' ? key : key.getPublicKey());

const base64url = (bytes: Uint8Array | string): string => Buffer.from(bytes).toString('base64url');

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 without padding (the form JWT ids take). */
function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** Account limits with nothing limited (an account JWT without them may hold no connection). */
export const UNLIMITED_ACCOUNT = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 };

/** User limits with nothing limited. */
export const UNLIMITED_USER = { subs: -1, data: -1, payload: -1 };

/**
 * A JWT v2 that `issuer` signs about `subject`: `nats` holds the claims of
 * its kind (`type`: operator, account or user, and what that kind carries).
 */
export function natsJwt(issuer: KeyPair, subject: Key, name: string, nats: { type: 'operator' | 'account' | 'user' } & Record<string, unknown>): string {
  const claims: Record<string, unknown> = {
    jti: '',
    iat: Math.floor(Date.now() / 1000),
    iss: issuer.getPublicKey(),
    name,
    sub: publicKey(subject),
    nats: { ...nats, version: 2 },
  };
  // The id is a hash of the claims themselves, taken while it is empty.
  claims.jti = base32(createHash('sha512-256').update(JSON.stringify(claims)).digest());
  const signed = `${base64url(JSON.stringify({ typ: 'JWT', alg: 'ed25519-nkey' }))}.${base64url(JSON.stringify(claims))}`;
  return `${signed}.${base64url(issuer.sign(new TextEncoder().encode(signed)))}`;
}

/** The text of a `.creds` file: a user's JWT and its nkey seed (for `natsTransport({ creds })`). */
export function userCreds(jwt: string, user: KeyPair): string {
  const seed = new TextDecoder().decode(user.getSeed());
  return [
    '-----BEGIN NATS USER JWT-----',
    jwt,
    '------END NATS USER JWT------',
    '',
    '-----BEGIN USER NKEY SEED-----',
    seed,
    '------END USER NKEY SEED------',
    '',
  ].join('\n');
}

/** nats-server configuration for operator mode with every account JWT preloaded in memory. */
export function operatorConfig(operatorJwt: string, systemAccount: string, accountJwts: string[]): string {
  const preload = accountJwts.map((jwt) => {
    const { sub } = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as { sub: string };
    return `  ${sub}: ${jwt}`;
  });
  return [`operator: ${operatorJwt}`, `system_account: ${systemAccount}`, 'resolver: MEMORY', 'resolver_preload: {', ...preload, '}'].join('\n');
}
