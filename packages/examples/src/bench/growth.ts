/**
 * The growth study: 1, 2, 4, 8 and 16 caller workers calling one callee with
 * no-op round trips at once, each one call after another; how the median
 * round trip and the total calls per second change with the number of callers.
 *
 * Over NATS the callers live in separate OS processes, but at most
 * {@link MAX_CALLER_PROCESSES} of them: on a 2-core machine 16 Node processes
 * (each with its TensorFlow.js) would measure the scheduler, not the bus, so
 * 8 and 16 callers share 4 processes (2 and 4 agents each, each agent with its
 * own NATS connection). On the in-process transport all callers are agents of
 * the one process.
 * @module
 */
import { GROWTH_WORKERS, growthPlan } from './cases.js';
import { BenchChild } from './process/bench-child.js';
import { formatRate, formatTime } from './report/format.js';
import type { GrowthRecord } from './results.js';
import { combineWindows, type WindowSample } from './stats.js';
import type { NodeSystem } from './systems/node-systems.js';
import { SYSTEM_LABELS, type SystemId } from './systems/system-ids.js';

/** Caller processes of one growth level over NATS, at most. */
export const MAX_CALLER_PROCESSES = 4;

/** Caller counts of the study (1 is the baseline). */
export const GROWTH_LEVELS = [1, ...GROWTH_WORKERS];

/** Agents per process for `workers` callers over NATS. */
export function spread(workers: number): number[] {
  const processes = Math.min(workers, MAX_CALLER_PROCESSES);
  return Array.from({ length: processes }, (_, i) => Math.floor(workers / processes) + (i < workers % processes ? 1 : 0));
}

async function natsLevel(system: 'tensorbus' | 'nats', workers: number, natsUrl: string, plan: { warmupMs: number; durationMs: number }): Promise<{ windows: WindowSample[]; processes: number }> {
  const counts = spread(workers);
  const callers = await Promise.all(
    counts.map((agents, p) =>
      BenchChild.start({
        label: `growth ${system} ${p}`,
        script: 'systems/growth-caller.js',
        args: ['--system', system, '--agents', String(agents), '--prefix', `grow${workers}p${p}`],
        env: { NATS_URL: natsUrl },
      }),
    ),
  );
  try {
    const answers = await Promise.all(callers.map((c) => c.request<WindowSample[]>('run', plan)));
    return { windows: answers.flat(), processes: counts.length };
  } finally {
    await Promise.all(callers.map((c) => c.stop()));
  }
}

/**
 * Runs the study on the systems given (tensorbus over NATS, tensorbus
 * in-process, raw NATS), printing each level as it completes.
 */
export async function runGrowth(systems: NodeSystem[], natsUrl: string | undefined, quick: boolean): Promise<GrowthRecord[]> {
  const plan = growthPlan(quick);
  const out: GrowthRecord[] = [];
  for (const system of systems) {
    const id: SystemId = system.id;
    for (const workers of GROWTH_LEVELS) {
      console.log(`[growth] ${SYSTEM_LABELS[id]}: ${workers} caller${workers > 1 ? 's' : ''} ...`);
      let windows: WindowSample[];
      let processes = 1;
      try {
        if (id === 'tensorbus-local') {
          windows = await system.caller.request<WindowSample[]>('growth', { agents: workers, ...plan });
        } else {
          const level = await natsLevel(id === 'nats' ? 'nats' : 'tensorbus', workers, natsUrl!, plan);
          windows = level.windows;
          processes = level.processes;
        }
      } catch (error) {
        console.log(`        -> failed: ${(error as Error).message}`);
        continue;
      }
      const combined = combineWindows(windows);
      const record = { system: id, workers, processes, medianMs: combined.medianMs, p90Ms: combined.p90Ms, perSecond: combined.perSecond };
      out.push(record);
      const base = out.find((r) => r.system === id && r.workers === 1);
      const growth = base ? ` (latency ${(record.medianMs / base.medianMs).toFixed(2)}x, calls/s ${(record.perSecond / base.perSecond).toFixed(2)}x of 1 caller)` : '';
      console.log(`        -> median ${formatTime(record.medianMs)}, p90 ${formatTime(record.p90Ms)}, total ${formatRate(record.perSecond)} over ${processes} process${processes > 1 ? 'es' : ''}${growth}`);
    }
  }
  return out;
}
