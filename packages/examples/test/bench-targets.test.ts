/**
 * The issue-16 targets as the bench evaluates them, from given figures: the
 * no-op against PyTorch RPC and raw TCP, the RRef cycle and the distributed
 * autograd step against PyTorch RPC, and between two hosts tensorbus against
 * PyTorch RPC between the same two hosts, with the peak memory there.
 */
import test from 'ava';
import { evaluateTargets, type TargetOutcome } from '../src/bench/report/targets.js';
import type { CaseResult, PeakRecord } from '../src/bench/results.js';

const MB = 1 << 20;

const outcome = (targets: TargetOutcome[], system: string, caseId: string, target: string) =>
  targets.find((t) => t.system === system && t.caseId === caseId && t.target === target);

test('bench targets - no-op latency is held to ≤0.5x PyTorch RPC and ≤2x raw TCP, beside ≤1.2x raw NATS', (t) => {
  const results: CaseResult[] = [
    { caseId: 'noop', system: 'tensorbus-nats', medianMs: 0.12 },
    { caseId: 'noop', system: 'pytorch', medianMs: 0.3 },
    { caseId: 'noop', system: 'tcp', medianMs: 0.05 },
    { caseId: 'noop', system: 'nats', medianMs: 0.3 },
  ];
  const targets = evaluateTargets(results, [], 400 * MB);
  t.like(outcome(targets, 'tensorbus-nats', 'noop', 'latency ≤0.5x PyTorch RPC'), { status: 'PASS', ratio: 0.4 });
  t.like(outcome(targets, 'tensorbus-nats', 'noop', 'latency ≤2.0x raw TCP'), { status: 'FAIL', ratio: 2.4 });
  t.like(outcome(targets, 'tensorbus-nats', 'noop', 'latency ≤1.2x raw NATS'), { status: 'PASS' });
  t.is(outcome(targets, 'tensorbus-nats', 'noop', 'latency ≤1.0x PyTorch RPC'), undefined, 'the old ≤1.0x target is replaced');

  const slower = evaluateTargets([...results.slice(0, 1).map((r) => ({ ...r, medianMs: 0.16 })), ...results.slice(1)], [], 400 * MB);
  t.like(outcome(slower, 'tensorbus-nats', 'noop', 'latency ≤0.5x PyTorch RPC'), { status: 'FAIL' }, '0.53x PyTorch misses');
});

test('bench targets - the RRef cycle needs ≥2x PyTorch RPC\'s rate and the dist autograd step ≤0.7x its latency', (t) => {
  const targets = evaluateTargets(
    [
      { caseId: 'rref', system: 'tensorbus-nats', perSecond: 7000 },
      { caseId: 'rref', system: 'pytorch', perSecond: 3000 },
      { caseId: 'autograd', system: 'tensorbus-nats', medianMs: 0.9 },
      { caseId: 'autograd', system: 'pytorch', medianMs: 1.2 },
      { caseId: 'rref', system: 'tensorbus-local', perSecond: 5000 },
      { caseId: 'autograd', system: 'tensorbus-local', medianMs: 0.6 },
    ],
    [],
    400 * MB,
  );
  t.like(outcome(targets, 'tensorbus-nats', 'rref', 'cycles/s ≥2.0x PyTorch RPC'), { status: 'PASS' });
  t.like(outcome(targets, 'tensorbus-nats', 'autograd', 'latency ≤0.7x PyTorch RPC'), { status: 'FAIL', ratio: 0.75 });
  t.like(outcome(targets, 'tensorbus-local', 'rref', 'cycles/s ≥2.0x PyTorch RPC'), { status: 'FAIL' });
  t.like(outcome(targets, 'tensorbus-local', 'autograd', 'latency ≤0.7x PyTorch RPC'), { status: 'PASS', ratio: 0.5 });
});

test('bench targets - between two hosts tensorbus is held to ≥1.0x the throughput of PyTorch RPC between the same hosts, and its processes to ≤3x the payload', (t) => {
  const results: CaseResult[] = [
    { caseId: '4MB', system: 'tensorbus-2hosts', medianMs: 4 },
    { caseId: '4MB', system: 'pytorch-2hosts', medianMs: 5 },
    { caseId: '400MB', system: 'tensorbus-2hosts', medianMs: 600 },
    { caseId: '400MB', system: 'pytorch-2hosts', medianMs: 500 },
    // A same-host PyTorch figure must not stand in for the two-host one.
    { caseId: '400MB', system: 'pytorch', medianMs: 900 },
  ];
  const peaks: PeakRecord[] = [
    { system: 'tensorbus-2hosts', role: 'driver (host A)', pid: 1, peakBytes: 1000 * MB, resetAtStart: true },
    { system: 'tensorbus-2hosts', role: 'callee (host B)', pid: 2, peakBytes: 1300 * MB, resetAtStart: true },
    { system: 'tensorbus-2hosts', role: 'nats-server', pid: 3, peakBytes: 20 * MB, resetAtStart: true },
  ];
  const targets = evaluateTargets(results, peaks, 400 * MB);
  const mine = targets.filter((x) => x.system === 'tensorbus-2hosts');
  t.deepEqual(
    mine.map((x) => [x.caseId, x.target, x.status, x.note]),
    [
      ['4MB', 'throughput ≥1.0x PyTorch RPC 2 hosts', 'PASS', undefined],
      ['400MB', 'throughput ≥1.0x PyTorch RPC 2 hosts', 'FAIL', undefined],
      ['400MB', 'peak RSS ≤3.0x payload', 'PASS', 'driver (host A)'],
      ['400MB', 'peak RSS ≤3.0x payload', 'FAIL', 'callee (host B)'],
    ],
  );
  t.is(mine[1]!.ratio, 500 / 600);
  t.false(targets.some((x) => x.system === 'tensorbus-2hosts' && x.target.includes('gRPC')), 'no same-host peer is a two-host target');

  const noPeer = evaluateTargets(results.filter((r) => r.system !== 'pytorch-2hosts'), peaks, 400 * MB);
  t.like(outcome(noPeer, 'tensorbus-2hosts', '4MB', 'throughput ≥1.0x PyTorch RPC 2 hosts'), { status: 'n/a', note: 'PyTorch RPC 2 hosts not run' });
});
