/**
 * Probes of what a worker can reach from its own NATS account, run by each
 * worker at start and reported: calls to other workers by name, a request on
 * the server's control subject, what is heard on the membership subject, and
 * a login into another account. Each probe has a control that shows the probe
 * itself works where access is allowed (a worker reaches its own subjects).
 * @module
 */
import { defaultCodec, type Transport } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { currentAgent, remoteFunction, type RpcAgent } from '@tensorbus/actors';
import { NAMESPACE } from './accounts.js';

/** Answers the name of the worker it runs on: the target of the call probes. */
export const hello = remoteFunction('fed.hello', () => currentAgent().self.name);

/** Where and as whom a worker connects. */
export interface Credentials {
  servers: string;
  user: string;
  pass: string;
}

/** One probe: what was tried and what came back (`answered ...` or the error's code). */
export interface Probe {
  what: string;
  outcome: string;
}

/** What one worker could and could not reach. */
export interface IsolationReport {
  worker: string;
  /** The worker's membership view. */
  group: string[];
  /** Worker names heard announcing themselves on `tb.members` within 1.2 s. */
  heardOnMembers: string[];
  probes: Probe[];
}

async function outcome(attempt: Promise<unknown>): Promise<string> {
  try {
    return `answered ${JSON.stringify(await attempt)}`;
  } catch (error) {
    return (error as { code?: string }).code ?? (error as Error).name;
  }
}

function connect(credentials: Credentials): Promise<Transport> {
  return natsTransport({ servers: credentials.servers, namespace: NAMESPACE, user: credentials.user, pass: credentials.pass, reconnect: false });
}

async function listenToMembers(raw: Transport, ms: number): Promise<string[]> {
  const heard = new Set<string>();
  const subscription = raw.subscribe('tb.members', (m) => {
    try {
      const name = (defaultCodec.decode(m.data) as { n?: unknown }).n;
      if (typeof name === 'string') heard.add(name);
    } catch {
      // Not an announcement.
    }
  });
  await new Promise((resolve) => setTimeout(resolve, ms));
  subscription.unsubscribe();
  return [...heard].sort();
}

/**
 * Runs the probes from `agent`: calls `fed.hello` on itself and on each of
 * `others`, pings `tb.ctl.<controlOf>`, listens on `tb.members`, and, when
 * `loginAs` is given, tries to log in as that user with this worker's password.
 */
export async function probeIsolation(
  agent: RpcAgent,
  credentials: Credentials,
  others: string[],
  controlOf: string,
  loginAs?: string,
): Promise<IsolationReport> {
  const probes: Probe[] = [];
  const me = agent.self.name;
  probes.push({ what: `call fed.hello on ${me} (itself)`, outcome: await outcome(agent.rpcSync(me, hello, [], { timeoutMs: 3_000 })) });
  for (const other of others) {
    probes.push({ what: `call fed.hello on ${other}`, outcome: await outcome(agent.rpcSync(other, hello, [], { timeoutMs: 3_000 })) });
  }
  const raw = await connect(credentials);
  try {
    const ping = raw.request(`tb.ctl.${controlOf}`, defaultCodec.encode({ k: 'ping' }), { timeoutMs: 3_000 }).then((bytes) => (defaultCodec.decode(bytes) as { k: string }).k);
    probes.push({ what: `request tb.ctl.${controlOf} (ping)`, outcome: await outcome(ping) });
    const heardOnMembers = await listenToMembers(raw, 1_200);
    if (loginAs) {
      const login = connect({ ...credentials, user: loginAs }).then(async (t) => {
        await t.close();
        return 'connected';
      });
      probes.push({ what: `log in as ${loginAs} with ${credentials.user}'s password`, outcome: await outcome(login) });
    }
    return { worker: me, group: agent.workers().map((w) => w.name), heardOnMembers, probes };
  } finally {
    await raw.close();
  }
}

/** One line: `call fed.hello on client2 -> WORKER_UNAVAILABLE; ...`. */
export function describeIsolation(report: IsolationReport): string {
  const probes = report.probes.map((p) => `${p.what} -> ${p.outcome}`).join('; ');
  return `isolation: group [${report.group.join(', ')}], heard on tb.members [${report.heardOnMembers.join(', ')}]; ${probes}`;
}
