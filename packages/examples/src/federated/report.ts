/**
 * What a run of the federated example leaves behind: `federated.json` (the
 * rounds, the clients' data, the isolation probes) and `federated.svg`
 * (held-out accuracy and participants per round).
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeChart } from '../common/svg-chart.js';
import type { IsolationReport } from './isolation.js';
import type { RoundResult } from './server.js';
import type { Settings } from './settings.js';

/** One client's data, as it reported it. */
export interface ClientData {
  worker: string;
  samples: number;
  classCounts: number[];
}

/** The content of `federated.json`. */
export interface FederatedRun {
  rounds: number;
  deadlineMs: number;
  localEpochs: number;
  skew: number;
  skip: Record<string, number[]>;
  crash: Record<string, number>;
  backend: string;
  seconds: number;
  finalTestAccuracy: number;
  clients: ClientData[];
  curve: RoundResult[];
  isolation: IsolationReport[];
  exits: Record<string, string>;
}

/** The run's record, from the settings and what the workers reported. */
export function summarize(
  settings: Settings,
  parts: { backend: string; seconds: number; clients: ClientData[]; curve: RoundResult[]; isolation: IsolationReport[]; exits: Record<string, string> },
): FederatedRun {
  const curve = [...parts.curve].sort((a, b) => a.round - b.round);
  return {
    rounds: settings.rounds,
    deadlineMs: settings.deadlineMs,
    localEpochs: settings.localEpochs,
    skew: settings.skew,
    skip: Object.fromEntries([...settings.skip].map(([name, rounds]) => [name, [...rounds].sort((a, b) => a - b)])),
    crash: Object.fromEntries(settings.crash),
    backend: parts.backend,
    seconds: parts.seconds,
    finalTestAccuracy: curve.length > 0 ? curve[curve.length - 1]!.testAccuracy : Number.NaN,
    clients: [...parts.clients].sort((a, b) => (a.worker < b.worker ? -1 : 1)),
    curve,
    isolation: [...parts.isolation].sort((a, b) => (a.worker < b.worker ? -1 : 1)),
    exits: parts.exits,
  };
}

/** Writes `federated.json` and `federated.svg` into `dir`; returns the chart's path. */
export function writeRun(dir: string, run: FederatedRun): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'federated.json'), JSON.stringify(run, null, 2));
  return writeChart(join(dir, 'federated.svg'), {
    title: `Federated averaging, ${run.clients.length} clients in separate NATS accounts (iris, label-skewed)`,
    xLabel: 'round',
    yLabel: 'held-out accuracy of the global model',
    yRightLabel: 'clients averaged in the round',
    xAxis: { integer: true },
    yAxis: { percent: true },
    yRightAxis: { integer: true, min: 0 },
    series: [
      { label: 'test accuracy', points: run.curve.map((c) => [c.round, c.testAccuracy]) },
      { label: 'participants', points: run.curve.filter((c) => c.participants).map((c) => [c.round, c.participants!.length]), right: true },
    ],
  });
}
