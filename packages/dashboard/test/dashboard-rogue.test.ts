/**
 * A bus client that is not a member answers the membership and stats
 * queries (startRogue of `@tensorbus/actors/testing`): a made-up worker, and made-up figures
 * for a real one. Neither reaches the dashboard's state, over every
 * transport; the real workers are shown with their own figures.
 */
import test from 'ava';
import { initRpc, reportStat, type RpcAgent } from '@tensorbus/actors';
import { startDashboard } from '../src/dashboard.js';
import type { DashboardState } from '../src/collector.js';
import { ROGUE_LOSS, startRogue } from '@tensorbus/actors/testing';
import { newGroup, stopAll, transportKinds } from './helpers.js';

const running: RpcAgent[] = [];
const closers: Array<() => Promise<void> | void> = [];
test.after.always(async () => {
  for (const close of closers) await Promise.resolve(close()).catch(() => undefined);
  await stopAll(running);
});

for (const kind of transportKinds('without-tcp')) {
  test.serial(`${kind.name} - observe - the dashboard shows no worker and no figure a non-member made up`, async (t) => {
    const g = newGroup(kind);
    for (const name of ['ra', 'rb']) running.push(await initRpc({ name, transport: g.transport(), heartbeatMs: 100, failureTimeoutMs: 600 }));
    reportStat(running.at(-2)!, 'loss', 0.25);
    const rogue = await g.transport();
    closers.push(startRogue(rogue, { ghost: 7, ra: 0 }), () => rogue.close());
    const dashboard = await startDashboard({ transport: await g.transport(), namespace: g.namespace, server: kind.name, port: 0, intervalMs: 300 });
    closers.push(() => dashboard.close());
    const states: DashboardState[] = [];
    for (let i = 0; i < 4; i++) states.push((await (await fetch(`${dashboard.url}state.json`)).json()) as DashboardState);
    for (const state of states) {
      t.false(state.workers.some((w) => w.name === 'ghost'), 'the made-up worker is not shown');
      t.false(state.workers.some((w) => w.stats?.host === 'rogue' || w.stats?.reported.loss === ROGUE_LOSS), 'no made-up figure is shown');
    }
    const last = states.at(-1)!;
    t.true(last.workers.some((w) => w.name === 'rb' && w.state === 'up' && w.stats?.name === 'rb'), 'a member the rogue does not claim is shown with its stats');
  });
}

