/**
 * The XML-RPC gateway driven by clients nobody here wrote: Python's standard
 * xmlrpc.client (in a child process) and curl with a hand-written body, over
 * every transport kind.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tf } from '@tensorbus/core';
import type { Transport } from '@tensorbus/core';
import { initRpc, type RpcAgent } from '@tensorbus/actors';
import { FAULT_CODES } from '../src/index.js';
import { rrefsReleased, transportKinds, eventually } from './helpers.js';
import { callBody, faultCodeOf, post, python, workerAndGateway } from './gateway-helpers.js';

const run = promisify(execFile);

for (const kind of transportKinds('without-tcp')) {
  test(`${kind.name} - gateway - python xmlrpc.client calls a tensor function on a worker and gets a tensor back`, async (t) => {
    const { gateway, lines } = await workerAndGateway(t, kind);
    const out = await python(gateway.url, 'tensor', 'w1');
    t.deepEqual(out, { dtype: 'float32', shape: [3], values: [2, 4, 6] });
    t.true(lines.some((line) => line.includes('method="w1.gw.scale"') && line.includes('worker="w1"') && line.includes('outcome=ok') && /ms=\d/.test(line)), lines.join('\n'));
  });

  test.serial(`${kind.name} - gateway - tensors of arguments and results do not outlive their requests`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind);
    const before = tf.memory().numTensors;
    await python(gateway.url, 'tensor', 'w1');
    await python(gateway.url, 'multicall', 'w1');
    await python(gateway.url, 'rref', 'w1');
    await rrefsReleased(workers);
    await eventually(() => tf.memory().numTensors === before).catch(() => undefined);
    t.is(tf.memory().numTensors, before);
  });

  test(`${kind.name} - gateway - python uses an RRef handle: class made remotely, methods, toHere, release; the owner holds nothing after`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind);
    const out = await python(gateway.url, 'rref', 'w1');
    t.regex(out.handle as string, /^rref-[A-Za-z0-9_-]{24}$/);
    t.is(out.first, 7);
    t.is(out.second, 10);
    t.deepEqual(out.here, { n: 10 });
    t.deepEqual(out.weights, [10, 10]);
    t.is(out.released, true);
    t.is((out.after as { fault: number }).fault, FAULT_CODES.GATEWAY_UNKNOWN_HANDLE);
    await rrefsReleased(workers);
    t.pass();
  });

  test(`${kind.name} - gateway - a function that returns an RRef gives a handle; toHere reads it, release lets the owner go`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind);
    const made = await post(gateway.url, callBody('w1.gw.makeRef', '<value><array><data><value><int>1</int></value><value><string>two</string></value></data></array></value>'));
    const handle = /<string>(rref-[A-Za-z0-9_-]{24})<\/string>/.exec(made.text)?.[1];
    t.truthy(handle, made.text);
    const here = await post(gateway.url, callBody('rref.toHere', `<value>${handle!}</value>`));
    t.regex(here.text, /<array><data><value><int>1<\/int><\/value><value><string>two<\/string><\/value><\/data><\/array>/);
    t.regex((await post(gateway.url, callBody('rref.release', `<value>${handle!}</value>`))).text, /<boolean>1<\/boolean>/);
    await rrefsReleased(workers);
    t.pass();
  });

  test(`${kind.name} - gateway - a result that cannot be written is a SERIALIZATION fault, and the RRefs in it are let go`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind);
    const answer = await post(gateway.url, callBody('w1.gw.refThenBadString'));
    t.is(faultCodeOf(answer.text), FAULT_CODES.SERIALIZATION);
    t.is(gateway.handleCount('anonymous:127.0.0.1'), 0);
    await rrefsReleased(workers);
    t.pass();
  });

  test(`${kind.name} - gateway - methodHelp of an unknown function and a nested multicall are faults`, async (t) => {
    const { gateway } = await workerAndGateway(t, kind);
    t.is(faultCodeOf((await post(gateway.url, callBody('system.methodHelp', '<value>w1.gw.nothing</value>'))).text), FAULT_CODES.UNKNOWN_FUNCTION);
    const nested = '<value><array><data><value><struct><member><name>methodName</name><value>system.multicall</value></member><member><name>params</name><value><array><data><value><array><data></data></array></value></data></array></value></member></struct></value></data></array></value>';
    const answer = await post(gateway.url, callBody('system.multicall', nested));
    t.regex(answer.text, new RegExp(`<name>faultCode</name><value><int>${FAULT_CODES.INVALID_ARGUMENT}</int>`));
  });

  test(`${kind.name} - gateway - python gets faults with stable codes: unknown function, remote error naming the worker, unknown worker`, async (t) => {
    const { gateway } = await workerAndGateway(t, kind, { retry: { attempts: 2, delayMs: 20 } });
    const out = (await python(gateway.url, 'faults', 'w1')) as Record<string, { fault: number; string: string }>;
    t.is(out.unknown!.fault, 4);
    t.is(out.unknown!.fault, FAULT_CODES.UNKNOWN_FUNCTION);
    t.regex(out.unknown!.string, /w1/);
    t.is(out.remote!.fault, FAULT_CODES.REMOTE_ERROR);
    t.regex(out.remote!.string, /worker 'w1'.*RangeError: boom/);
    t.is(out.worker!.fault, FAULT_CODES.WORKER_UNAVAILABLE);
    t.regex(out.worker!.string, /nobody/);
  });

  test(`${kind.name} - gateway - python system.multicall runs the calls in order, a fault in its place`, async (t) => {
    const { gateway } = await workerAndGateway(t, kind);
    const out = (await python(gateway.url, 'multicall', 'w1')) as { results: Array<Record<string, unknown>> };
    t.deepEqual(out.results[0], { ok: 'a' });
    t.is(out.results[1]!.fault, FAULT_CODES.REMOTE_ERROR);
    t.regex(out.results[1]!.string as string, /inside/);
    t.deepEqual(out.results[2], { ok: [3] });
  });

  test(`${kind.name} - gateway - python values round-trip: int, double, boolean, escaped string, base64, dateTime, nested arrays, nil`, async (t) => {
    const { gateway } = await workerAndGateway(t, kind);
    const out = (await python(gateway.url, 'values', 'w1')) as { back: Record<string, unknown> };
    t.deepEqual(out.back, { i: 7, neg: -3, d: 1.5, b: true, s: 'a < b & c', bytes: [0, 1, 255], when: '20240506T07:08:09', list: [1, [2, 'x']], none: null, empty: '' });
  });

  test(`${kind.name} - gateway - system.listMethods lists each worker's functions, classes and tf ops; methodHelp gives the doc`, async (t) => {
    const { gateway } = await workerAndGateway(t, kind, {}, ['w1', 'w2']);
    await eventually(() => true);
    const out = (await python(gateway.url, 'list', 'w2')) as { methods: string[]; help: string };
    for (const name of ['system.multicall', 'rref.toHere', 'w1.gw.scale', 'w2.gw.scale', 'w1.gw.Counter', 'w2.tf.add']) t.true(out.methods.includes(name), name);
    t.false(out.methods.some((m) => m.includes('.tb.')), 'protocol functions are not listed');
    t.false(out.methods.some((m) => m.startsWith(`${gateway.name}.`)), 'the gateway does not list itself');
    t.regex(out.help, /gw\.scale.*w2.*x \* k/);
  });

  test(`${kind.name} - gateway - curl with a hand-written body calls tf.add and gets the sum`, async (t) => {
    const { gateway } = await workerAndGateway(t, kind);
    const one = Buffer.from(new Float32Array([1.5, 2]).buffer).toString('base64');
    const tensor = `<value><struct><member><name>dtype</name><value>float32</value></member><member><name>shape</name><value><array><data><value><int>2</int></value></data></array></value></member><member><name>data</name><value><base64>${one}</base64></value></member></struct></value>`;
    const body = callBody('w1.tf.add', tensor, tensor);
    const { stdout } = await run('curl', ['-s', '-H', 'Content-Type: text/xml', '--data-binary', body, gateway.url], { encoding: 'utf8' });
    t.is(faultCodeOf(stdout), undefined, stdout);
    const data = /<name>data<\/name><value><base64>([^<]*)<\/base64>/.exec(stdout)![1]!;
    t.deepEqual([...new Float32Array(new Uint8Array(Buffer.from(data, 'base64')).buffer)], [3, 4]);
    t.regex(stdout, /<name>dtype<\/name><value><string>float32<\/string>/);
  });

  test(`${kind.name} - gateway - a call to a worker that appears within the retry window is retried and served; a remote error is not retried`, async (t) => {
    // The worker starts once a call to it has failed undelivered (nobody served its name yet): the gateway must send it again.
    let late: Promise<RpcAgent> | undefined;
    let connectLate: () => Promise<Transport> = () => Promise.reject(new Error('not yet'));
    const startLate = () => (late ??= initRpc({ name: 'late', transport: connectLate(), logger: null }));
    t.teardown(async () => (await late)?.shutdown({ graceful: false }).catch(() => undefined));
    const watching = async (transport: Transport): Promise<Transport> =>
      new Proxy(transport, {
        get(target, key) {
          const value = Reflect.get(target, key) as unknown;
          if (key !== 'request' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
          return (subject: string, ...rest: unknown[]) => {
            const reply = (value as (...a: unknown[]) => Promise<unknown>).call(target, subject, ...rest);
            if (subject === 'tb.call.late') reply.catch(() => void startLate());
            return reply;
          };
        },
      });
    const { gateway, lines, connect } = await workerAndGateway(t, kind, { retry: { attempts: 6, delayMs: 100 } }, ['w1'], watching);
    connectLate = connect;
    const answer = await post(gateway.url, callBody('late.gw.echo', '<value><int>5</int></value>'));
    t.regex(answer.text, /<int>5<\/int>/);
    const lateLine = lines.find((line) => line.includes('late.gw.echo'))!;
    t.regex(lateLine, /outcome=ok retries=[1-5]/);
    const failing = await post(gateway.url, callBody('w1.gw.raise', '<value>no retry</value>'));
    t.is(faultCodeOf(failing.text), FAULT_CODES.REMOTE_ERROR);
    const raiseLine = lines.find((line) => line.includes('w1.gw.raise'))!;
    t.false(raiseLine.includes('retries='), raiseLine);
  });
}
