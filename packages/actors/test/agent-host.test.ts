/**
 * The agent host and its protocol plugins (agent/host.ts): what a protocol
 * declares is enforced, a protocol added as a plugin works end to end over
 * every transport, and protocol code outside a worker fails one way.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { defaultCodec, InvalidArgumentError, localTransport, SerializationError, ShutdownError } from '@tensorbus/core';
import { remoteFunction } from '../src/index.js';
import { decodeWithoutTensors } from '../src/tensors.js';
import { controlSubject } from '../src/agent/subjects.js';
import {
  callScope,
  hostOf,
  lookupCallable,
  membershipPlugin,
  PluginKey,
  resolveOptions,
  servingPlugin,
  startAgent,
  WorkerHost,
  type AgentHost,
  type AnyPlugin,
  type ProtocolPlugin,
} from '../src/internal.js';
import { RRef, type RRefHost } from '../src/rref/rref.js';
import { eventually, newGroup, stopAll, stopEverything, transportKinds } from './helpers.js';

test.after.always(stopEverything);

/** A protocol of a test's own: a counter each worker keeps, bumped by peers over control messages and read by a call. */
class Tally {
  count = 0;
  constructor(private readonly host: AgentHost) {
    host.onControl(BUMP, (m) => {
      this.count += typeof m.n === 'number' ? m.n : 0;
      return { ok: true };
    });
  }

  /** Bumps `worker`'s tally by `n` (acknowledged). */
  bump(worker: string, n: number): Promise<unknown> {
    return this.host.requestControl(worker, { k: BUMP, n }, 2_000);
  }

  /** `worker`'s tally, through the plugin's own remote function. */
  read(worker: string): Promise<unknown> {
    return this.host.call(worker, READ_FN, []);
  }
}

const BUMP = 'tally.bump';
const READ_FN = 'tb.test.tally.read';
const TALLY = new PluginKey<Tally>('tally');
remoteFunction(READ_FN, () => servingPlugin(TALLY, 'tally.read').plugin.count);
const tallyPlugin: ProtocolPlugin<Tally> = { key: TALLY, kinds: [BUMP], functions: [READ_FN], install: (host) => new Tally(host) };

/** A plugin with the given declarations whose install runs `install`. */
function plugin(name: string, kinds: string[], functions: string[] = [], install: (host: AgentHost) => void = () => undefined): AnyPlugin {
  return { key: new PluginKey<object>(name), kinds, functions, install: (host) => (install(host), {}) };
}

/** A host on a fresh local transport with `plugins` after membership (what `new RpcAgent` does). */
async function hostWith(plugins: AnyPlugin[]): Promise<WorkerHost> {
  return new WorkerHost(await localTransport(), resolveOptions({ name: 'solo', transport: localTransport() }), membershipPlugin, plugins);
}

test('agent host - a control kind declared by two plugins is refused when the second is installed', async (t) => {
  const error = await t.throwsAsync(hostWith([plugin('one', ['x.ping']), plugin('two', ['x.ping'])]), { instanceOf: InvalidArgumentError });
  t.regex(error!.message, /'x\.ping' is declared by both 'one' and 'two'/);
});

test('agent host - a plugin may handle only the kinds it declared', async (t) => {
  const error = await t.throwsAsync(hostWith([plugin('one', ['x.ping'], [], (host) => host.onControl('x.pong', () => undefined))]), { instanceOf: InvalidArgumentError });
  t.regex(error!.message, /'x\.pong' is not declared by the plugin/);
});

test('agent host - a protocol function declared twice, or not registered at all, is refused', async (t) => {
  remoteFunction('tb.test.twice', () => 1);
  const twice = await t.throwsAsync(hostWith([plugin('one', [], ['tb.test.twice']), plugin('two', [], ['tb.test.twice'])]), { instanceOf: InvalidArgumentError });
  t.regex(twice!.message, /'one' and 'two' both declare the function 'tb\.test\.twice'/);
  const missing = await t.throwsAsync(hostWith([plugin('one', [], ['tb.test.never-registered'])]));
  t.is((missing as { code?: string }).code, 'UNKNOWN_FUNCTION');
});

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - agent host - ${title}`;

  test(t('a protocol added as one plugin works end to end: its control kind and its function'), async (tt) => {
    const group = newGroup(kind);
    const agents = await Promise.all(['a', 'b'].map((name) => startAgent({ name, transport: group.transport(), heartbeatMs: 100, failureTimeoutMs: 600 }, [tallyPlugin])));
    const [a, b] = agents;
    const tally = hostOf(a!).plugin(TALLY);
    await tally.bump('b', 3);
    await tally.bump('b', 4);
    tt.is(hostOf(b!).plugin(TALLY).count, 7);
    tt.is(await tally.read('b'), 7, 'its function runs on the peer and finds its plugin there');
    await stopAll(agents);
  });

  test(t('a control message of an undeclared kind fails where it is sent; one a worker does not handle is answered with an error'), async (tt) => {
    const group = newGroup(kind);
    const [a, b] = await Promise.all(['a', 'b'].map((name) => startAgent({ name, transport: group.transport(), heartbeatMs: 100, failureTimeoutMs: 600 }, [])));
    tt.throws(() => hostOf(a!).sendControl('b', { k: 'rref.frok' }), { instanceOf: InvalidArgumentError, message: /'rref\.frok' is declared by no protocol plugin/ });
    // A peer that runs a protocol this worker lacks (or a hostile one) gets a typed refusal, and the worker carries on.
    const before = hostOf(b!).control.malformed;
    const reply = decodeWithoutTensors(await hostOf(a!).transport.request(controlSubject('b'), defaultCodec.encode({ k: 'tally.bump', n: 1 }), { timeoutMs: 2_000 })) as { error?: { code?: string; message?: string } };
    tt.is(reply.error?.code, 'INVALID_ARGUMENT');
    tt.regex(reply.error?.message ?? '', /handles no control messages of kind 'tally\.bump'/);
    tt.is(hostOf(b!).control.malformed, before + 1);
    tt.deepEqual(b!.workers().map((w) => w.name).sort(), ['a', 'b']);
    await stopAll([a!, b!]);
  });

  test(t('a protocol function called as a plain function outside any served call fails with ShutdownError'), async (tt) => {
    const group = newGroup(kind);
    const [a] = await Promise.all(['a'].map((name) => startAgent({ name, transport: group.transport(), heartbeatMs: 100, failureTimeoutMs: 600 }, [])));
    for (const fn of ['tb.rref.fetch', 'tb.rref.backward', 'tb.autograd.grads', 'tb.autograd.release']) {
      const error = await tt.throwsAsync(async () => lookupCallable(fn, 'a').invoke(['a.x.1', 'a/x.1', []]), { instanceOf: ShutdownError }, fn);
      tt.regex(error!.message, /runs only inside calls served by an RPC agent/, fn);
    }
    tt.is(callScope.getStore(), undefined);
    await stopAll([a!]);
    await eventually(() => a!.workers().length <= 1);
  });
}

test('agent host - RRefs decoded outside a worker fail with ShutdownError, malformed ones with SerializationError', async (t) => {
  const wire = defaultCodec.encode({ r: forgedRRef({ o: 'w', r: 'w.x.1', f: 'w.x.2', p: 'w' }) });
  t.throws(() => defaultCodec.decode(wire), { instanceOf: ShutdownError, message: /RRefs travel only in messages of an RPC agent/ });
  const group = newGroup(transportKinds()[0]!);
  const [a] = await Promise.all(['a'].map((name) => startAgent({ name, transport: group.transport(), heartbeatMs: 100, failureTimeoutMs: 600 }, [])));
  const malformed = defaultCodec.encode({ r: forgedRRef({ o: 'w', r: 42, f: null, p: 'w' }) });
  t.throws(() => defaultCodec.decode(malformed, { host: hostOf(a!), peer: 'w' }), { instanceOf: SerializationError, message: /malformed RRef on the wire/ });
  await stopAll([a!]);
});

/** An RRef that encodes as `wire` (what a peer, honest or not, may send). */
function forgedRRef(wire: unknown): RRef<unknown> {
  return new RRef({ write: () => wire } as unknown as RRefHost, 'forged', 'w', undefined, undefined);
}

test('architecture - the import graph of the packages has no circle, type imports included', (t) => {
  const packages = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
  const sources = readdirSync(packages).flatMap((pkg) => listTs(join(packages, pkg, 'src')));
  const imports = new Map<string, string[]>();
  const specifier = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s*'(\.[^']+)'|import\(\s*'(\.[^']+)'\s*\)|(?:^|\n)\s*import\s*'(\.[^']+)'/g;
  for (const file of sources) {
    const text = readFileSync(file, 'utf8');
    imports.set(file, [...text.matchAll(specifier)].map((m) => resolve(dirname(file), (m[1] ?? m[2] ?? m[3])!.replace(/\.js$/, '.ts'))));
  }
  t.true(sources.length > 100, `${sources.length} source files found`);
  const circles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    path.push(file);
    for (const next of imports.get(file) ?? []) {
      if (state.get(next) === 'open') circles.push([...path.slice(path.indexOf(next)), next].map((f) => relative(packages, f)).join(' -> '));
      else if (!state.has(next) && imports.has(next)) visit(next);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of sources) if (!state.has(file)) visit(file);
  t.deepEqual(circles, []);
});

function listTs(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => (e.isDirectory() ? listTs(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}
