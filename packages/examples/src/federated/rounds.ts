/**
 * The aggregation server's rounds of federated averaging (FedAvg, McMahan et
 * al. 2017), as PyTorch's async_execution would write them: clients pull the
 * global model and push their updates, and each call waits, without holding
 * the server up, until its round closes.
 *
 * A round closes when every live client has submitted, or at its deadline with
 * those that did; the new global model is the average of the submitted
 * weights, weighted by the clients' sample counts. A client that missed a
 * round's deadline (sat it out, crashed, was killed) is no longer waited for;
 * it is live again as soon as it asks for a round. A client whose update the
 * server refused is dropped the same way, without waiting for the deadline.
 * @module
 */
import { tf } from '@tensorbus/core';
import type * as TfNamespace from '@tensorflow/tfjs';

type Tensor = TfNamespace.Tensor;

/** The global model of a round, as a client receives it. */
export interface GlobalModel {
  /** The round to train (1-based); `rounds + 1` once done. */
  round: number;
  weights: Tensor[];
  /** No more rounds: the client may leave. */
  done: boolean;
}

/** The answer to a submission. */
export interface SubmitResult extends GlobalModel {
  /** False when the round had already closed (the update came too late and was dropped). */
  accepted: boolean;
}

/** What the server learns about a round when it closes. */
export interface RoundRecord {
  round: number;
  /** Clients whose updates were averaged. */
  participants: string[];
  /** Live clients that did not submit by the deadline. */
  missing: string[];
  /** Sum of the participants' sample counts (the weights' denominator). */
  samples: number;
  closedBy: 'all' | 'deadline';
  /** From opening to closing. */
  seconds: number;
}

/** Settings of {@link FedAvgRounds}. */
export interface RoundSettings {
  rounds: number;
  deadlineMs: number;
  /** Round 1 opens once this many clients joined. */
  clients: number;
}

interface Update {
  weights: Tensor[];
  samples: number;
}

/** The server's state: the global model (variables) and the round being gathered. */
export class FedAvgRounds {
  /** The round being gathered: 0 before the first opens, `rounds + 1` once done. */
  current = 0;
  readonly joined = new Map<string, number>();
  private readonly live = new Set<string>();
  private readonly updates = new Map<string, Update>();
  /** Callers waiting for round k to open (or for the end), by k. */
  private readonly openWaiters = new Map<number, Array<() => void>>();
  /** Callers waiting for the current round to close. */
  private closeWaiters: Array<() => void> = [];
  private deadline: NodeJS.Timeout | undefined;
  private openedAt = 0;

  constructor(
    readonly global: TfNamespace.Variable[],
    readonly settings: RoundSettings,
    private readonly onClose: (record: RoundRecord) => void,
  ) {}

  get done(): boolean {
    return this.current > this.settings.rounds;
  }

  /** Registers a client and its sample count; round 1 opens once all expected clients joined. */
  join(client: string, samples: number): { rounds: number; deadlineMs: number } {
    this.joined.set(client, samples);
    this.live.add(client);
    if (this.current === 0 && this.joined.size >= this.settings.clients) this.open(1);
    return { rounds: this.settings.rounds, deadlineMs: this.settings.deadlineMs };
  }

  /** The global model of `round`: at once if it is open (or past), else once it opens. */
  async model(client: string, round: number): Promise<GlobalModel> {
    if (round > this.current && !this.done) await new Promise<void>((resolve) => this.waitForOpen(round, resolve));
    if (!this.done) this.live.add(client);
    return this.snapshot();
  }

  /** Adds `client`'s update to `round`; resolves with the next global model once the round closed. */
  async submit(client: string, round: number, weights: Tensor[], samples: number): Promise<SubmitResult> {
    if (round !== this.current || this.done || !this.joined.has(client)) {
      // Too late (or too early): the weights are dropped with the call's arguments.
      return { ...this.snapshot(), accepted: false };
    }
    this.updates.get(client)?.weights.forEach((w) => w.dispose());
    this.updates.set(client, { weights: weights.map((w) => tf.keep(w)), samples });
    this.live.add(client);
    const closed = new Promise<void>((resolve) => this.closeWaiters.push(resolve));
    if ([...this.live].every((name) => this.updates.has(name))) this.close('all');
    await closed;
    return { ...this.snapshot(), accepted: true };
  }

  /**
   * Drops `client` from the round being gathered after the server refused
   * what it sent: the round is not held up waiting for it (it is live again
   * once it asks for a round), and closes now if everyone else submitted.
   */
  refuse(client: string): void {
    this.live.delete(client);
    const waiting = [...this.live].some((name) => !this.updates.has(name));
    if (this.current > 0 && !this.done && this.updates.size > 0 && !waiting) this.close('all');
  }

  /** Stops the deadline timer and frees pending updates. */
  dispose(): void {
    if (this.deadline) clearTimeout(this.deadline);
    for (const update of this.updates.values()) update.weights.forEach((w) => w.dispose());
    this.updates.clear();
  }

  private waitForOpen(round: number, resolve: () => void): void {
    const list = this.openWaiters.get(round) ?? [];
    list.push(resolve);
    this.openWaiters.set(round, list);
  }

  private open(round: number): void {
    this.current = round;
    this.openedAt = Date.now();
    if (!this.done) {
      this.deadline = setTimeout(() => this.close('deadline'), this.settings.deadlineMs);
    }
    for (const [k, waiters] of [...this.openWaiters]) {
      if (k <= round || this.done) {
        this.openWaiters.delete(k);
        waiters.forEach((resolve) => resolve());
      }
    }
  }

  private close(closedBy: RoundRecord['closedBy']): void {
    if (this.deadline) clearTimeout(this.deadline);
    this.deadline = undefined;
    const participants = [...this.updates.keys()].sort();
    const missing = [...this.live].filter((name) => !this.updates.has(name)).sort();
    const samples = [...this.updates.values()].reduce((sum, u) => sum + u.samples, 0);
    if (participants.length > 0 && samples > 0) this.average(samples);
    for (const update of this.updates.values()) update.weights.forEach((w) => w.dispose());
    this.updates.clear();
    // Whoever missed the deadline is not waited for again until it shows up.
    for (const name of missing) this.live.delete(name);
    this.onClose({ round: this.current, participants, missing, samples, closedBy, seconds: (Date.now() - this.openedAt) / 1000 });
    const waiters = this.closeWaiters;
    this.closeWaiters = [];
    this.open(this.current + 1);
    waiters.forEach((resolve) => resolve());
  }

  /** global = sum_k (n_k / n) w_k over the submitted updates. */
  private average(samples: number): void {
    const updates = [...this.updates.values()];
    tf.tidy(() => {
      this.global.forEach((variable, i) => {
        const weighted = updates.map((u) => tf.mul(u.weights[i]!, u.samples / samples));
        variable.assign(tf.addN(weighted));
      });
    });
  }

  /** A copy of the global model: the call's answer is disposed after it is sent, the variables stay. */
  private snapshot(): GlobalModel {
    return { round: this.current, weights: this.global.map((v) => tf.clone(v)), done: this.done };
  }
}
