/**
 * Command-line flags of `npm run bench`:
 *
 *   --quick             small repetition counts, no 400 MB case (a smoke test)
 *   --only a,b,...      cases to run: noop, 4KB, 1MB, 4MB, 40MB, 400MB (or identity: all sizes),
 *                       async, rref, autograd, growth, apps (the examples: RL, parameter server, pipeline)
 *   --baseline <rev>    the git revision whose build the application cases also run on (default
 *                       {@link DEFAULT_BASELINE}); built in a worktree under .bench/ (apps/baseline-build.ts)
 *   --no-baseline       the application cases on this build only
 *   --app-runs <n>      runs of each build per application case, and of PyTorch's RL example beside
 *                       this build's (default 5 and 3; 1 with --quick): more runs, a steadier median
 *   --systems a,b,...   systems to run: tensorbus-nats, tensorbus-nats-no-poll, tensorbus-local, nats, grpc, tcp, pytorch,
 *                       tensorbus-2hosts, pytorch-2hosts, tab-to-node, node-to-tab, tensorbus-nats-bus
 *   --out <dir>         where the JSON, markdown and SVG go (default out/bench)
 *   --doc <file>        the markdown whose generated part the run rewrites (default docs/performance.md
 *                       of this repository); only a full run writes it
 *   --no-doc            leave every doc alone
 *   --allow-partial     write the doc from a partial run too (it says so, with the reasons)
 *   --experiment <name> a data-plane A/B experiment instead of the benchmark (`list` names them; with
 *                       --rounds N pairs, default 6; see experiments/experiment-command.ts)
 * @module
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { APPS_ID, CASES, GROWTH_ID, PEAK_MEMORY_BYTES } from './cases.js';
import { SYSTEM_IDS, type SystemId } from './systems/system-ids.js';

/** The parsed flags. */
export interface BenchOptions {
  quick: boolean;
  /** Case ids to run (growth included when asked). */
  cases: Set<string>;
  systems: Set<SystemId>;
  out: string;
  /** The doc whose generated part this run rewrites; undefined with `--no-doc`. */
  doc: string | undefined;
  /** Write the doc from a partial run too. */
  allowPartial: boolean;
  /** The revision the application cases also run on; undefined with `--no-baseline`. */
  baseline: string | undefined;
  /** Runs of each application case per build (`--app-runs`); undefined: the defaults. */
  appRuns: number | undefined;
}

/** Most runs `--app-runs` accepts. */
export const MAX_APP_RUNS = 100;

/** The default baseline of the application cases: main a week before issue 38 (the RL example's rate before it fell). */
export const DEFAULT_BASELINE = 'd087f90';

/** docs/performance.md of this repository (this file is packages/examples/dist/src/bench/options.js). */
const DEFAULT_DOC = fileURLToPath(new URL('../../../../../docs/performance.md', import.meta.url));

function list(argv: string[], flag: string): string[] | undefined {
  const i = argv.indexOf(flag);
  if (i < 0) return undefined;
  const value = argv[i + 1];
  if (value === undefined || value.startsWith('--')) throw new Error(`${flag} needs a comma-separated list`);
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}

/** Parses the flags; throws with the valid names on an unknown case or system. */
export function parseOptions(argv: string[]): BenchOptions {
  const quick = argv.includes('--quick');
  const allCases = [...CASES.map((c) => c.id), GROWTH_ID, APPS_ID];
  const sizeIds = CASES.filter((c) => (c.bytes ?? 0) > 0).map((c) => c.id);
  const only = list(argv, '--only')?.flatMap((id) => (id === 'identity' ? sizeIds : [id]));
  for (const id of only ?? []) {
    const known = allCases.find((c) => c.toLowerCase() === id.toLowerCase());
    if (!known) throw new Error(`unknown case '${id}'; cases: ${allCases.join(', ')} (identity = every size)`);
  }
  const cases = new Set(only ? allCases.filter((c) => only.some((id) => id.toLowerCase() === c.toLowerCase())) : allCases);
  if (quick && !only) cases.delete(CASES.find((c) => c.bytes === PEAK_MEMORY_BYTES)!.id);
  const systemList = list(argv, '--systems') ?? [...SYSTEM_IDS];
  for (const id of systemList) {
    if (!(SYSTEM_IDS as readonly string[]).includes(id)) throw new Error(`unknown system '${id}'; systems: ${SYSTEM_IDS.join(', ')}`);
  }
  const b = argv.indexOf('--baseline');
  if (b >= 0 && (argv[b + 1] === undefined || argv[b + 1]!.startsWith('--'))) throw new Error('--baseline needs a git revision');
  const r = argv.indexOf('--app-runs');
  const appRuns = r >= 0 ? Number(argv[r + 1]) : undefined;
  if (appRuns !== undefined && !(Number.isInteger(appRuns) && appRuns >= 1 && appRuns <= MAX_APP_RUNS)) {
    throw new Error(`--app-runs needs a whole number from 1 to ${MAX_APP_RUNS}`);
  }
  const i = argv.indexOf('--out');
  const d = argv.indexOf('--doc');
  if (d >= 0 && (argv[d + 1] === undefined || argv[d + 1]!.startsWith('--'))) throw new Error('--doc needs a file');
  return {
    quick,
    cases,
    systems: new Set(systemList as SystemId[]),
    out: resolve(i >= 0 && argv[i + 1] ? argv[i + 1]! : 'out/bench'),
    doc: argv.includes('--no-doc') ? undefined : d >= 0 ? resolve(argv[d + 1]!) : DEFAULT_DOC,
    allowPartial: argv.includes('--allow-partial'),
    baseline: argv.includes('--no-baseline') ? undefined : b >= 0 ? argv[b + 1]! : DEFAULT_BASELINE,
    appRuns,
  };
}
