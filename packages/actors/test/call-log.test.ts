/**
 * A call whose function throws is logged on the callee, one line each
 * (worker, function or method, caller, error), through the agent's `logger`
 * option; refused calls are the caller's to fix and are not logged; a flood
 * is cut to a few lines a second.
 */
import test from 'ava';
import { InvalidArgumentError, RemoteError, RRefError, UnknownFunctionError } from '@tensorbus/core';
import { initRpc, type InitRpcOptions, type RpcAgent, type TensorbusLogger } from '../src/index.js';
import { fail, failAsync } from './fixtures/functions.js';
import { Fragile } from './fixtures/tensor-functions.js';
import { eventually, newGroup, stopAll, transportKinds, type TransportKind } from './helpers.js';

/** A logger that keeps its lines. */
function recorder(): TensorbusLogger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, error: (line) => void lines.push(line) };
}

/** Workers `a` (the caller) and `b` (the callee) in a fresh group, each with its own logger option. */
async function pair(kind: TransportKind, a: InitRpcOptions['logger'], b: InitRpcOptions['logger']): Promise<RpcAgent[]> {
  const group = newGroup(kind);
  const start = (name: string, logger: InitRpcOptions['logger']) =>
    initRpc({ name, transport: group.transport(), heartbeatMs: 100, failureTimeoutMs: 600, ...(logger === undefined ? {} : { logger }) });
  return Promise.all([start('a', a), start('b', b)]);
}

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - call log - ${title}`;

  test(t('a function that throws is logged on the callee: one line naming the worker, the function, the caller and the error'), async (tt) => {
    const callerLog = recorder();
    const calleeLog = recorder();
    const agents = await pair(kind, callerLog, calleeLog);
    try {
      await tt.throwsAsync(agents[0]!.rpcSync('b', fail, ['boom\n  on two lines']), { instanceOf: RemoteError });
      tt.deepEqual(calleeLog.lines, ["[tensorbus] worker 'b': function 'test.fail' called by 'a' failed: RangeError: boom on two lines"]);
      tt.deepEqual(callerLog.lines, [], 'the caller gets the error, it does not log it');
      await tt.throwsAsync(agents[0]!.rpcSync('b', failAsync, ['later']), { instanceOf: RemoteError });
      tt.is(calleeLog.lines[1], "[tensorbus] worker 'b': function 'test.failAsync' called by 'a' failed: TypeError: later");
    } finally {
      await stopAll(agents);
    }
  });

  test(t('a constructor and a method of a remote object are named in the line'), async (tt) => {
    const calleeLog = recorder();
    const agents = await pair(kind, null, calleeLog);
    try {
      const broken = agents[0]!.remote('b', Fragile, [true]);
      await tt.throwsAsync(broken.toHere(), { instanceOf: RRefError });
      tt.is(calleeLog.lines.length, 1);
      tt.regex(calleeLog.lines[0]!, /^\[tensorbus\] worker 'b': constructor 'tt\.Fragile' \(for remote\(\)\) called by 'a' failed: RangeError: constructor refused$/);
      const ok = agents[0]!.remote('b', Fragile, [false]);
      await tt.throwsAsync(ok.rpcSync().explode('bad input'), { instanceOf: RemoteError });
      tt.is(calleeLog.lines[1], "[tensorbus] worker 'b': method 'explode' of an RRef called by 'a' failed: TypeError: bad input");
      await ok.release();
    } finally {
      await stopAll(agents);
    }
  });

  test(t('refused calls (unknown function, method or RRef) are answered, not logged'), async (tt) => {
    const calleeLog = recorder();
    const agents = await pair(kind, null, calleeLog);
    try {
      await tt.throwsAsync(agents[0]!.rpcSync('b', 'no.such.function', []), { instanceOf: UnknownFunctionError });
      const ok = agents[0]!.remote('b', Fragile, [false]);
      await tt.throwsAsync((ok.rpcSync() as unknown as { nothing(): Promise<unknown> }).nothing(), { instanceOf: UnknownFunctionError });
      // An RRef id the callee does not hold (made up, or released).
      await tt.throwsAsync(agents[0]!.rpcSync('b', 'tb.rref.fetch', ['a.nothing.1']), { instanceOf: RRefError, code: 'RREF_OWNER_LOST' } as never);
      tt.deepEqual(calleeLog.lines, []);
      await ok.release();
    } finally {
      await stopAll(agents);
    }
  });

  test(t('a flood of failing calls writes at most 10 lines a second, then one line counting the rest'), async (tt) => {
    const calleeLog = recorder();
    const agents = await pair(kind, null, calleeLog);
    try {
      const started = Date.now();
      const results = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => agents[0]!.rpcSync('b', fail, [`flood ${i}`])));
      const seconds = Math.ceil((Date.now() - started) / 1_000) + 1;
      tt.true(results.every((r) => r.status === 'rejected'), 'every caller still gets its error');
      await eventually(() => calleeLog.lines.some((line) => / more failed calls? not logged/.test(line)), 3_000);
      const single = calleeLog.lines.filter((line) => line.includes("function 'test.fail'"));
      const counted = calleeLog.lines.map((line) => / (\d+) more failed calls? not logged/.exec(line)).reduce((n, m) => n + (m ? Number(m[1]) : 0), 0);
      tt.true(single.length <= 10 * seconds, `${single.length} lines in about ${seconds} s`);
      tt.is(single.length + counted, 200, 'each failure is a line or counted in one');
    } finally {
      await stopAll(agents);
    }
  });

  test.serial(t('logger null or false silences it; a logger that throws fails neither the call nor the worker'), async (tt) => {
    // Nothing reaches stderr, even where the default logger would write there (TENSORBUS_QUIET unset).
    const quiet = process.env.TENSORBUS_QUIET;
    const write = process.stderr.write;
    const written: string[] = [];
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      written.push(String(chunk));
      return write.call(process.stderr, chunk, ...rest);
    }) as typeof process.stderr.write;
    try {
      for (const logger of [null, false] as const) {
        delete process.env.TENSORBUS_QUIET;
        const agents = await pair(kind, null, logger);
        if (quiet !== undefined) process.env.TENSORBUS_QUIET = quiet;
        try {
          await tt.throwsAsync(agents[0]!.rpcSync('b', fail, [`quiet ${String(logger)}`]), { instanceOf: RemoteError });
        } finally {
          await stopAll(agents);
        }
      }
    } finally {
      process.stderr.write = write;
      if (quiet !== undefined) process.env.TENSORBUS_QUIET = quiet;
    }
    tt.deepEqual(written.filter((line) => line.includes('quiet')), []);
    const agents = await pair(kind, null, { error: () => { throw new Error('logger down'); } });
    try {
      await tt.throwsAsync(agents[0]!.rpcSync('b', fail, ['still answered']), { instanceOf: RemoteError, message: /still answered/ });
      await tt.throwsAsync(agents[0]!.rpcSync('b', fail, ['and again']), { instanceOf: RemoteError, message: /and again/ });
    } finally {
      await stopAll(agents);
    }
  });
}

test('call log - a logger without error() is refused at initRpc', async (t) => {
  await t.throwsAsync(initRpc({ name: 'x', logger: {} as TensorbusLogger }), { instanceOf: InvalidArgumentError, message: /logger must have an error/ });
});
