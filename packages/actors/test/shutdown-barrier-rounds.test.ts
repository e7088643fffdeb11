/**
 * The static shutdown barrier's rounds (shutdown/barrier.ts), over members
 * whose answers a test scripts: a quiet group is confirmed by a second round
 * asked at once; a call that moves between two quiet rounds keeps the
 * barrier up until two rounds agree; an answer not signed by its member
 * counts as no answer, and the barrier times out naming it.
 */
import test from 'ava';
import { RpcTimeoutError } from '@tensorbus/core';
import { signStatus, staticBarrier, type BarrierParticipant, type ShutdownStatus } from '../src/shutdown/barrier.js';
import type { ControlMessage } from '../src/agent/control.js';

/** A member's signature in these tests: its name over the text (what `verify` checks). */
const signerOf = (name: string) => ({ name, sign: (text: string) => `${name}:${text}` });

interface Script {
  /** Each member's status for round r (0-based), for every member but the barrier's own. */
  status(member: string, round: number): ShutdownStatus;
  /** A member that signs with another's name (a forger). */
  forger?: string;
}

/** A participant named `self` among `members`, answering as `script` says; counts the rounds asked. */
function group(self: string, members: string[], script: Script): { participant: BarrierParticipant; rounds: () => number } {
  const asked = new Map<string, number>();
  const participant: BarrierParticipant = {
    name: self,
    liveMembers: () => [self, ...members],
    status: () => ({ requested: true, busy: 0, sentTo: {}, receivedFrom: {} }),
    async request(worker: string, message: ControlMessage) {
      const round = asked.get(worker) ?? 0;
      asked.set(worker, round + 1);
      const signer = signerOf(script.forger === worker ? 'someone-else' : worker);
      return signStatus(signer, message, script.status(worker, round));
    },
    verify: (from: string, text: string, signature: unknown) => signature === `${from}:${text}`,
    pauseForAsk: () => Promise.resolve(),
  };
  return { participant, rounds: () => Math.max(0, ...asked.values()) };
}

const quiet = (sentTo: Record<string, number> = {}, receivedFrom: Record<string, number> = {}): ShutdownStatus => ({ requested: true, busy: 0, sentTo, receivedFrom });

test('shutdown-barrier - a quiet group is confirmed by a second round asked at once', async (t) => {
  const { participant, rounds } = group('w0', ['w1', 'w2'], {
    status: (member) => (member === 'w1' ? quiet({ w2: 3 }) : quiet({}, { w1: 3 })),
  });
  const started = performance.now();
  await staticBarrier(participant, 5_000);
  const elapsed = performance.now() - started;
  t.is(rounds(), 2, 'two rounds, the second confirming the first');
  // The least pause between other rounds is 15 ms; a confirmation does not wait it.
  t.true(elapsed < 15, `took ${elapsed.toFixed(1)} ms`);
});

test('shutdown-barrier - a call that moves between two quiet rounds keeps the barrier up until two rounds agree', async (t) => {
  // Round 0: w1 sent 1 call to w2, received. Round 1: one more, sent and received between the rounds. Then still.
  const calls = (round: number) => Math.min(round, 1) + 1;
  const { participant, rounds } = group('w0', ['w1', 'w2'], {
    status: (member, round) => (member === 'w1' ? quiet({ w2: calls(round) }) : quiet({}, { w1: calls(round) })),
  });
  await staticBarrier(participant, 5_000);
  t.is(rounds(), 3, 'the moved call changed a counter: a third round had to agree with the second');
});

test('shutdown-barrier - a round not quiet (calls in flight) is never the end, whatever follows', async (t) => {
  // Round 0: sent 2, received 1 (in flight). Round 1 and on: received.
  const { participant, rounds } = group('w0', ['w1', 'w2'], {
    status: (member, round) => (member === 'w1' ? quiet({ w2: 2 }) : quiet({}, { w1: round === 0 ? 1 : 2 })),
  });
  await staticBarrier(participant, 5_000);
  t.is(rounds(), 3, 'the first quiet round (1) is confirmed by round 2');
});

test('shutdown-barrier - an answer not signed by its member counts as none: the barrier times out naming it', async (t) => {
  const { participant } = group('w0', ['w1', 'w2'], { status: () => quiet(), forger: 'w2' });
  const error = await t.throwsAsync(staticBarrier(participant, 300), { instanceOf: RpcTimeoutError });
  t.regex(error!.message, /w2 \(no answer\)/);
});
