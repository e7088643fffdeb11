/**
 * The backward half of the autograd protocol: a pass over this worker's part
 * of a context's graph (backward-pass.ts) from roots or from gradients a peer
 * sent, the gradients it produces for received tensors sent back to their
 * senders (`tb.autograd.grads`), and the time a whole backward may take
 * shared by every pass it causes. See docs/dist-autograd.md.
 * @module
 */
import { AutogradError, PermissionDeniedError, RemoteError, RpcTimeoutError, tf } from '@tensorbus/core';
import type { AgentHost } from '../agent/host.js';
import { nextTurn } from '../platform/process.js';
import { localPass, type PassResult } from './backward-pass.js';
import type { AutogradContext, RecvRecord } from './context.js';
import type { ContextId, ContextTable } from './context-table.js';
import { GRADS } from './protocol.js';
import { isTimeout, protocolCall } from './protocol-call.js';
import { withoutRecording } from './tape.js';

type Tensor = tf.Tensor;

/** Runs the passes of backward on one worker and exchanges their gradients. */
export class GradientFlow {
  constructor(
    private readonly host: AgentHost,
    private readonly contexts: ContextTable,
  ) {}

  /**
   * Runs backward from `roots` (checked by the caller) across every worker
   * involved; past `timeoutMs` (0: no limit) rejects with RpcTimeoutError.
   */
  async backward(context: AutogradContext, roots: Tensor[], timeoutMs: number): Promise<void> {
    const seeds = withoutRecording(() => roots.map((root): [Tensor, Tensor] => [root, tf.onesLike(root)]));
    const deadline = timeoutMs > 0 ? Date.now() + timeoutMs : undefined;
    const pass = this.pass(context, seeds, deadline).finally(() => {
      for (const [, one] of seeds) one.dispose();
    });
    if (deadline === undefined) return pass;
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RpcTimeoutError(`backward of autograd context ${context.id} did not finish within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([pass, expired]);
    } catch (error) {
      // A gradient message lost on the way surfaces as the call's timeout, wrapped: it is the backward's timeout.
      if (error instanceof RpcTimeoutError || (Date.now() >= deadline && isTimeout(error))) {
        pass.catch(() => undefined);
        throw error instanceof RpcTimeoutError ? error : new RpcTimeoutError(`backward of autograd context ${context.id} did not finish within ${timeoutMs} ms`, { cause: error });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Gradients arrived for the tensors of send `msgId`: runs the local pass
   * they start. Only the worker that send went to, shown by its call's MAC
   * (`verified`), may answer it: anyone else is refused and the context is
   * left as it was.
   * @throws PermissionDeniedError when `from` is not the verified counterpart of send `msgId`.
   */
  async receive(contextId: ContextId, msgId: string, grads: Array<Tensor | null>, from: string, verified: boolean, deadline?: number): Promise<void> {
    const context = this.contexts.require(contextId);
    const send = typeof msgId === 'string' ? context.sends.get(msgId) : undefined;
    if (!verified || (send === undefined ? !context.known.has(from) : send.peer !== from)) {
      throw new PermissionDeniedError(`worker '${String(from).slice(0, 64)}' may not send gradients for message ${String(msgId).slice(0, 64)} of autograd context ${contextId}: only the verified worker it was sent to may`);
    }
    context.lastUsed = Date.now();
    // A message that carried no float tensor was not recorded: nothing flows back through it.
    if (send === undefined) return;
    if (!Array.isArray(grads) || grads.length !== send.tensors.length) {
      throw new AutogradError('AUTOGRAD_BACKWARD_FAILED', `worker '${from}' sent ${String(grads?.length)} gradient(s) for message ${msgId}, which carried ${send.tensors.length} tensor(s)`);
    }
    const seeds: Array<[Tensor, Tensor]> = [];
    send.tensors.forEach((tensor, i) => {
      const grad = grads[i];
      if (grad instanceof tf.Tensor) seeds.push([tensor, grad]);
    });
    if (seeds.length > 0) {
      // A pass is synchronous. Several gradient messages often arrive in one read (one per
      // micro-batch of a pipeline): yielding first lets the gradients the previous pass sent
      // leave before this one starts, so the next worker works on them meanwhile.
      await new Promise<void>((resolve) => nextTurn(resolve));
      if (!context.open) {
        throw new AutogradError('AUTOGRAD_CONTEXT_NOT_FOUND', `autograd context ${contextId} was released during its backward pass`);
      }
      await this.pass(context, seeds, deadline);
    }
  }

  /** One local pass, then the gradients it produced for received tensors go back to their senders. */
  private async pass(context: AutogradContext, seeds: Array<[Tensor, Tensor]>, deadline?: number): Promise<void> {
    let result: PassResult;
    try {
      result = localPass(context, seeds);
    } catch (error) {
      throw this.failure(context, this.host.name, error);
    }
    for (const [variable, grad] of result.leaves) {
      if (context.open) context.accumulate(variable, grad);
      else grad.dispose();
    }
    const settled = await Promise.allSettled([...result.outgoing].map(([record, grads]) => this.send(context, record, grads, deadline)));
    for (const row of result.outgoing.values()) for (const grad of row) grad?.dispose();
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async send(context: AutogradContext, record: RecvRecord, grads: Array<Tensor | null>, deadline?: number): Promise<void> {
    try {
      this.host.checkLive(record.peer);
      // The receiver's own sends share what is left of the backward's time.
      const left = deadline === undefined ? undefined : Math.max(1, deadline - Date.now());
      await protocolCall(this.host, record.peer, GRADS, left === undefined ? [context.id, record.msgId, grads] : [context.id, record.msgId, grads, left], left);
    } catch (error) {
      throw this.failure(context, record.peer, error);
    }
  }

  /** The error of a backward that failed on `worker` (an error that already names its worker is kept). */
  private failure(context: AutogradContext, worker: string, error: unknown): AutogradError {
    if (error instanceof AutogradError && error.code === 'AUTOGRAD_BACKWARD_FAILED') return error;
    const reason =
      error instanceof RemoteError ? `${error.remoteName}: ${error.remoteMessage}` : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return new AutogradError('AUTOGRAD_BACKWARD_FAILED', `backward of autograd context ${context.id} failed on worker '${worker}': ${reason}`, { cause: error });
  }
}
