/**
 * Who sends a request: HTTP basic (a configured user and password) or a
 * bearer JWT (verified with `jose` against a configured secret, public key
 * or JWKS URL). Each maps to a NATS identity, whose connection the gateway
 * calls through, so a client may call what that identity may publish. With
 * no auth configured every request is the anonymous client of its address,
 * on the `default` identity (and the gateway binds loopback only).
 * @module
 */
import { createHash, createPublicKey, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { InvalidArgumentError } from '@tensorbus/core';
import { GatewayError } from './errors.js';

/** A basic-auth user. */
export interface BasicUser {
  password: string;
  /** The NATS identity (a key of `identities`) its calls go through. */
  identity: string;
}

/** How bearer JWTs are verified and mapped. */
export interface JwtAuth {
  /** HMAC secret (HS256/384/512). */
  secret?: string;
  /** PEM public key (RS*, PS*, ES*, EdDSA). */
  publicKey?: string;
  /** URL of a JWKS (the keys are fetched and cached by `jose`). */
  jwksUrl?: string;
  /** Required `iss`. */
  issuer?: string;
  /** Required `aud`. */
  audience?: string;
  /**
   * Accepted algorithms; a token signed with another is refused. Default: one
   * per key, HS256 for a secret, RS256, PS256, ES256/384/512 or EdDSA by the
   * public key's type; for a JWKS the asymmetric ones (never HMAC).
   */
  algorithms?: string[];
  /** The claim naming the NATS identity (default `tensorbus_identity`). */
  identityClaim?: string;
}

/** Auth of the gateway. */
export interface GatewayAuth {
  /** Basic-auth users by user name. */
  basic?: Record<string, BasicUser>;
  jwt?: JwtAuth;
}

/** Who a request is from. */
export interface Principal {
  /**
   * The client, for its handles and in-flight count: `basic:<user>`,
   * `jwt:<identity>/<sub>` (a token's subject counts only within its
   * identity) or `anonymous:<address>`.
   */
  client: string;
  /** The NATS identity its calls go through. */
  identity: string;
}

/** The identity of anonymous clients when no auth is configured. */
export const DEFAULT_IDENTITY = 'default';

const MAX_TOKEN = 8192;

/** Verifies requests' credentials. */
export class Authenticator {
  private readonly users = new Map<string, { digest: Buffer; identity: string }>();
  private readonly key: KeyObject | JWTVerifyGetKey | undefined;
  private readonly algorithms: string[] = [];

  constructor(private readonly auth: GatewayAuth | undefined, private readonly identities: ReadonlySet<string>) {
    for (const [user, entry] of Object.entries(auth?.basic ?? {})) {
      if (typeof entry?.password !== 'string' || entry.password === '') throw new InvalidArgumentError(`basic user '${user}' needs a password`);
      if (!identities.has(entry.identity)) throw new InvalidArgumentError(`basic user '${user}' maps to identity '${entry.identity}', which is not configured`);
      this.users.set(user, { digest: digest(entry.password), identity: entry.identity });
    }
    const jwt = auth?.jwt;
    if (jwt) {
      const given = [jwt.secret, jwt.publicKey, jwt.jwksUrl].filter((k) => k !== undefined).length;
      if (given !== 1) throw new InvalidArgumentError('jwt auth needs exactly one of secret, publicKey, jwksUrl');
      this.key = jwt.secret !== undefined ? createSecretKey(Buffer.from(jwt.secret)) : jwt.publicKey !== undefined ? createPublicKey(jwt.publicKey) : createRemoteJWKSet(new URL(jwt.jwksUrl!));
      this.algorithms = pinnedAlgorithms(jwt, this.key);
    }
  }

  /** True when requests must carry credentials. */
  get required(): boolean {
    return this.users.size > 0 || this.key !== undefined;
  }

  /** The principal of `request`; GatewayError 'GATEWAY_UNAUTHORIZED' when its credentials are missing or wrong. */
  async authenticate(request: IncomingMessage): Promise<Principal> {
    if (!this.required) return { client: `anonymous:${request.socket.remoteAddress ?? '?'}`, identity: DEFAULT_IDENTITY };
    const header = request.headers.authorization;
    if (typeof header !== 'string' || header.length > MAX_TOKEN) throw unauthorized('credentials are required (HTTP basic or a bearer token)');
    const space = header.indexOf(' ');
    const scheme = header.slice(0, space).toLowerCase();
    const value = header.slice(space + 1).trim();
    if (scheme === 'basic' && this.users.size > 0) return this.basic(value);
    if (scheme === 'bearer' && this.key !== undefined) return this.bearer(value);
    throw unauthorized(`the ${scheme || 'given'} scheme is not accepted here`);
  }

  private basic(value: string): Principal {
    const text = Buffer.from(value, 'base64').toString('utf8');
    const colon = text.indexOf(':');
    const user = colon < 0 ? '' : text.slice(0, colon);
    const entry = this.users.get(user);
    // Compared as digests in constant time, and a digest compared even for an unknown user: the time says nothing.
    const ok = timingSafeEqual(digest(text.slice(colon + 1)), entry?.digest ?? digest('\0no user'));
    if (!entry || !ok) throw unauthorized('wrong user or password');
    return { client: `basic:${user}`, identity: entry.identity };
  }

  private async bearer(token: string): Promise<Principal> {
    const jwt = this.auth!.jwt!;
    let payload: Record<string, unknown>;
    try {
      // A token must expire, and be signed with an algorithm this gateway configured.
      const options = { issuer: jwt.issuer, audience: jwt.audience, algorithms: this.algorithms, requiredClaims: ['exp'] };
      const key = this.key!;
      // Two calls, not one: jose types a key and a key getter as separate overloads.
      ({ payload } = typeof key === 'function' ? await jwtVerify(token, key, options) : await jwtVerify(token, key, options));
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      throw unauthorized(`the bearer token was refused (${typeof code === 'string' ? code : 'invalid'})`);
    }
    const identity = payload[jwt.identityClaim ?? 'tensorbus_identity'];
    if (typeof identity !== 'string' || !this.identities.has(identity)) throw unauthorized('the token names no configured identity');
    const subject = typeof payload.sub === 'string' ? payload.sub.slice(0, 200) : identity;
    // Keyed by identity too: a token of another identity naming the same subject is another client.
    return { client: `jwt:${identity}/${subject}`, identity };
  }
}

const HMAC = ['HS256', 'HS384', 'HS512'];
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const EC_ALGORITHM: Record<string, string> = { prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' };

/** The algorithms tokens may be signed with: the configured ones (checked against the key's kind), else the key's own. */
function pinnedAlgorithms(jwt: JwtAuth, key: KeyObject | JWTVerifyGetKey): string[] {
  const allowed = jwt.secret !== undefined ? HMAC : ASYMMETRIC;
  if (jwt.algorithms !== undefined) {
    if (!Array.isArray(jwt.algorithms) || jwt.algorithms.length === 0 || !jwt.algorithms.every((a) => allowed.includes(a))) {
      throw new InvalidArgumentError(`jwt.algorithms must be a non-empty list of ${jwt.secret !== undefined ? 'HMAC algorithms (HS256, HS384, HS512) for a secret' : `public-key algorithms (${ASYMMETRIC.join(', ')})`}`);
    }
    return [...jwt.algorithms];
  }
  if (jwt.secret !== undefined) return ['HS256'];
  if (typeof key === 'function') return ASYMMETRIC;
  const type = key.asymmetricKeyType;
  if (type === 'rsa') return ['RS256'];
  if (type === 'rsa-pss') return ['PS256'];
  if (type === 'ed25519') return ['EdDSA'];
  const curve = type === 'ec' ? EC_ALGORITHM[key.asymmetricKeyDetails?.namedCurve ?? ''] : undefined;
  if (curve === undefined) throw new InvalidArgumentError(`jwt.publicKey is a ${type ?? 'unknown'} key: give jwt.algorithms`);
  return [curve];
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function unauthorized(why: string): GatewayError {
  return new GatewayError('GATEWAY_UNAUTHORIZED', why);
}
