/**
 * Graceful shutdown waits for work, not for a clock [shutdown(graceful=True)]:
 * as long as the others are alive and working, and no longer than failure
 * detection takes once one stops answering.
 */
import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { hostOf } from '../src/internal.js';
import { addNumbers, sleep } from './fixtures/functions.js';
import { startGroup, stopEverything, transportKinds } from './helpers.js';
import { startProcessGroup, TIMING, stopProcessGroups } from './process-group.js';

test.after.always(stopProcessGroups);

test.after.always(stopEverything);

for (const kind of transportKinds('without-tcp')) {
  test.serial(`${kind.name} - shutdown - by default it waits for a peer that works longer than the call timeout`, async (t) => {
    // The old default was the agent's rpcTimeoutMs (here 300 ms): a peer working 2 s made it give up.
    const [a, b] = await startGroup(kind, ['a', 'b'], { worldSize: 2, rpcTimeoutMs: 300 });
    const started = Date.now();
    const leaving = a!.shutdown();
    const work = (async () => {
      let sum = 0;
      while (Date.now() - started < 2_000) sum += (await b!.rpcSync('a', sleep, [50, 1], { timeoutMs: 5_000 })) as number;
      return sum;
    })();
    t.true((await work) >= 10, 'b kept working with a while a waited');
    await b!.shutdown();
    await t.notThrowsAsync(leaving);
    t.true(Date.now() - started >= 2_000, `a left after ${Date.now() - started} ms, once b was done`);
  });

  test.serial(`${kind.name} - shutdown - a worker done early asks a member that has not called shutdown about once a second, and leaves soon after it does`, async (t) => {
    const [a, b] = await startGroup(kind, ['a', 'b'], { worldSize: 2 });
    // Each status b gives is a signature b makes (its heartbeats are signed elsewhere).
    const members = hostOf(b!).members;
    const sign = members.sign.bind(members);
    const signedAt: number[] = [];
    members.sign = (text: string) => {
      signedAt.push(Date.now());
      return sign(text);
    };
    t.teardown(() => (members.sign = sign));
    const leaving = a!.shutdown();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const asked = signedAt.length;
    t.true(asked >= 1, 'a still asks b while it waits');
    t.true(asked <= 5, `${asked} status answers in 2 s: a polled b about 10 times a second or more`);
    // Right after a round, a would next ask in a second: b's word that it asked to shut down must end that pause.
    const seen = signedAt.length;
    while (signedAt.length === seen) await new Promise((resolve) => setTimeout(resolve, 5));
    const asking = Date.now();
    await b!.shutdown();
    await t.notThrowsAsync(leaving);
    const took = Date.now() - asking;
    t.true(took < 600, `a left ${took} ms after b asked to shut down (a round without b's word comes after 1 s)`);
  });
}

test.serial('nats processes - shutdown - a peer that stops answering is not waited for: it is named once failure detection declares it failed', async (t) => {
  const worker = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
  const { agent, children } = await startProcessGroup(worker, 3, TIMING.fast);
  t.is(await agent.rpcSync('p1', addNumbers, [1, 2]), 3);
  const lines: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    lines.push(String(chunk));
    return write(chunk, ...rest);
  }) as typeof process.stderr.write;
  t.teardown(() => {
    process.stderr.write = write;
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  });
  const started = Date.now();
  const leaving = agent.shutdown();
  // p2 shuts down with us; p1 is killed while we wait for it.
  void agent.rpcSync('p2', 'test.mp.shutdown', []).catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, 500));
  children[0]!.kill('SIGKILL');
  await t.notThrowsAsync(leaving);
  const took = Date.now() - started;
  t.true(took < 500 + TIMING.fast.failureTimeoutMs + 3_000, `left ${took} ms after asking, soon after p1 died`);
  t.true(lines.some((line) => /graceful shutdown of 'p0' went on without 'p1': declared failed/.test(line)), lines.join(''));
  if (children[1]!.exitCode === null) await once(children[1]!, 'exit');
});
