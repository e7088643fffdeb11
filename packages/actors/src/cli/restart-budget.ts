/**
 * The restart intensity of a supervising `tensorbus launch`, as Erlang/OTP
 * counts it: at most `maxRestarts` restarts of the group's workers within any
 * `windowMs` (the whole run when no window is given). A failure past that
 * budget is not restarted: the launcher stops the group as an unsupervised
 * one does.
 * @module
 */

/** How a supervising launcher restarts failed workers. */
export interface RestartPolicy {
  /** Restarts allowed within the window; 0: none (a failure stops the group). */
  maxRestarts: number;
  /** The window restarts are counted in, ms; `Infinity`: the whole run. */
  windowMs: number;
  /** `one`: restart the failed worker alone; `all`: stop and restart every worker with it. */
  strategy: 'one' | 'all';
}

/** Counts restarts against a {@link RestartPolicy}. */
export class RestartBudget {
  private readonly times: number[] = [];

  constructor(private readonly policy: RestartPolicy) {}

  /** Takes one restart from the budget at `now`; false when `maxRestarts` were taken within the window already. */
  take(now = Date.now()): boolean {
    while (this.times.length > 0 && now - this.times[0]! >= this.policy.windowMs) this.times.shift();
    if (this.times.length >= this.policy.maxRestarts) return false;
    this.times.push(now);
    return true;
  }

  /** Says the budget, for the launcher's messages: "3 restarts within 60 s". */
  describe(): string {
    const within = Number.isFinite(this.policy.windowMs) ? ` within ${this.policy.windowMs / 1000} s` : '';
    return `${this.policy.maxRestarts} restart${this.policy.maxRestarts === 1 ? '' : 's'}${within}`;
  }
}
