/**
 * The aggregation server's remote functions: the only things the clients'
 * accounts can reach, through the one service the server's account exports.
 * Platform-free, so a page imports the same handles as a Node client; the
 * worker that hosts the rounds plugs its {@link FederationHost} in.
 *
 * A client names itself with a {@link ClientId}: its name and the ticket it
 * was given with its credentials. A name is not a capability: the host
 * refuses a name whose ticket does not match, so a client cannot act as
 * another one even though the server cannot tell the accounts apart.
 * @module
 */
import { remoteFunction } from '@tensorbus/actors';
import type * as TfNamespace from '@tensorflow/tfjs';
import type { GlobalModel, SubmitResult } from './rounds.js';

type Tensor = TfNamespace.Tensor;

/** Who a client says it is: its name and the secret ticket handed out with its credentials. */
export interface ClientId {
  client: string;
  ticket: string;
}

/** What a client learns when it joins. */
export interface JoinAnswer {
  rounds: number;
  deadlineMs: number;
}

/**
 * The server's side of the calls. Arguments come straight off the network:
 * the host checks every one before it keeps anything.
 */
export interface FederationHost {
  join(id: unknown, samples: unknown): JoinAnswer;
  model(id: unknown, round: unknown): Promise<GlobalModel>;
  submit(id: unknown, round: unknown, weights: unknown, samples: unknown): Promise<SubmitResult>;
}

let host: FederationHost | undefined;

/** Makes this worker serve the calls below with `next` (undefined: stop serving them). */
export function hostFederation(next: FederationHost | undefined): void {
  host = next;
}

function hosted(): FederationHost {
  if (!host) throw new Error('this worker hosts no federated-averaging server');
  return host;
}

/** A client joins with its sample count; answers the number of rounds and the deadline. */
export const join = remoteFunction('fed.join', (id: ClientId, samples: number): JoinAnswer => hosted().join(id, samples));

/** The global model of `round`, once that round is open [async_execution]. */
export const getGlobal = remoteFunction('fed.getGlobal', (id: ClientId, round: number): Promise<GlobalModel> => hosted().model(id, round));

/** Submits a client's weights for `round`; answers the next global model once the round closed [async_execution]. */
export const submitUpdate = remoteFunction('fed.submitUpdate', (id: ClientId, round: number, weights: Tensor[], samples: number): Promise<SubmitResult> =>
  hosted().submit(id, round, weights, samples),
);
