/**
 * The creation call of `remote()`, sent once the code that called it is done
 * (a microtask), so that a `toHere()` made in the same turn can ask the
 * creation to bring the value back: `remote()` + `toHere()` is then one
 * exchange (docs/rref.md, "remote()"). Anything the worker sends before the
 * microtask sends the waiting creations first, so nothing overtakes them.
 * @module
 */
import { captureScope } from '../platform/async-scope.js';
import { disposeTransient } from '../tensors.js';
import type { CreationLaunch, UserState } from './rref.js';

/** The creations of one worker that wait for the end of the code that called `remote()`. */
export class CreationLaunches {
  private readonly waiting = new Set<UserState>();

  /** True when some creation still waits. */
  get pending(): boolean {
    return this.waiting.size > 0;
  }

  /**
   * The creation of `state`, to be sent by `send` at the end of the current
   * code (or earlier, by `go()`), in the async scope of the `remote()` that
   * made it (its autograd context, the call it serves) wherever it is sent from.
   */
  start(state: UserState, send: (wantsValue: boolean) => Promise<unknown>): CreationLaunch {
    let settle!: { resolve: (value: unknown) => void; reject: (error: unknown) => void };
    const scope = captureScope('tb.rref.create');
    const launch: CreationLaunch = {
      wantsValue: false,
      abandoned: false,
      result: new Promise<unknown>((resolve, reject) => (settle = { resolve, reject })),
      go: () => {
        if (state.launch !== launch) return;
        state.launch = undefined;
        this.waiting.delete(state);
        try {
          scope(send, launch.wantsValue).then(settle.resolve, settle.reject);
        } catch (error) {
          settle.reject(error);
        }
      },
    };
    // A value brought back for a toHere() that gave up meanwhile is let go.
    launch.result.then((value) => launch.abandoned && disposeTransient(value), () => undefined);
    state.launch = launch;
    this.waiting.add(state);
    queueMicrotask(launch.go);
    return launch;
  }

  /** Sends every creation still waiting (something else is about to be sent). */
  sendAll(): void {
    for (const state of [...this.waiting]) state.launch?.go();
  }
}
