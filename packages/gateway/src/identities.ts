/**
 * One worker of the namespace per NATS identity: the gateway's calls for a
 * client go through the agent of the client's identity, whose transport was
 * made with that identity's credentials, so the bus (its accounts and
 * permissions) decides what the client may reach. Agents are named
 * `<gateway name>` for the `default` identity and `<gateway name>-<identity>`
 * for the others.
 * @module
 */
import { InvalidArgumentError, type Transport } from '@tensorbus/core';
import { initRpc } from '@tensorbus/actors/internal';
import type { RpcAgent } from '@tensorbus/actors/internal';
import { validateWorkerName } from '@tensorbus/actors/internal';
import { DEFAULT_IDENTITY } from './auth.js';

/** NATS credentials of one identity (as `natsTransport` takes them). */
export interface NatsIdentity {
  user?: string;
  pass?: string;
  token?: string;
  nkeySeed?: string;
  credsFile?: string;
}

/** Makes the transport of one identity. */
export type IdentityConnector = (identity: string, credentials: NatsIdentity, workerName: string) => Transport | Promise<Transport>;

const IDENTITY_NAME = /^[A-Za-z0-9_-]{1,32}$/;

/** The agents of the gateway, one per identity, started together. */
export class IdentityAgents {
  private readonly agents = new Map<string, RpcAgent>();

  private constructor(readonly gatewayName: string) {}

  /** Starts one agent per identity; on any failure stops those started and rethrows. */
  static async start(gatewayName: string, identities: Record<string, NatsIdentity>, connect: IdentityConnector, rpcTimeoutMs: number): Promise<IdentityAgents> {
    validateWorkerName(gatewayName);
    const out = new IdentityAgents(gatewayName);
    try {
      await Promise.all(Object.entries(identities).map(async ([identity, credentials]) => {
        if (!IDENTITY_NAME.test(identity)) throw new InvalidArgumentError(`identity name ${JSON.stringify(identity)}: use 1 to 32 letters, digits, '_' or '-'`);
        const name = identity === DEFAULT_IDENTITY ? gatewayName : `${gatewayName}-${identity}`;
        validateWorkerName(name);
        const agent = await initRpc({ name, transport: connect(identity, credentials, name), rpcTimeoutMs, logger: null });
        out.agents.set(identity, agent);
      }));
    } catch (error) {
      await out.close();
      throw error;
    }
    return out;
  }

  /** The agent of `identity` (configured, as the authenticator checked). */
  get(identity: string): RpcAgent {
    const agent = this.agents.get(identity);
    if (!agent) throw new InvalidArgumentError(`identity '${identity}' is not configured`);
    return agent;
  }

  /** True for a worker that is one of the gateway's own agents. */
  isOwn(worker: string): boolean {
    for (const agent of this.agents.values()) if (agent.self.name === worker) return true;
    return false;
  }

  /** Names of the gateway's agents. */
  names(): string[] {
    return [...this.agents.values()].map((agent) => agent.self.name);
  }

  /** Stops every agent. */
  async close(): Promise<void> {
    const agents = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(agents.map((agent) => agent.shutdown({ graceful: false }).catch(() => undefined)));
  }
}
