/**
 * How a process gets its TensorFlow.js (core/tf.ts), as a user's process
 * sees it, each case in a fresh Node process: the backend it says it uses is
 * the one in use, `TENSORBUS_BACKEND` forces one, and a user's own import of
 * `@tensorflow/tfjs` shares the engine tensorbus uses (same tensors, same
 * memory counts), however tensorbus loaded it.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CORE = new URL('../src/index.js', import.meta.url).href;
const HERE = fileURLToPath(new URL('.', import.meta.url));

/** Runs `body` (an ES module's text, with `core` imported) in a new process; its stdout's last line as JSON, and its stderr. */
async function inProcess(body: string, env: Record<string, string> = {}): Promise<{ out: Record<string, unknown>; err: string }> {
  const source = `const core = await import(${JSON.stringify(CORE)});\n${body}`;
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
  delete childEnv.TENSORBUS_QUIET;
  delete childEnv.TENSORBUS_BACKEND_SAID;
  if (!('TENSORBUS_BACKEND' in env)) delete childEnv.TENSORBUS_BACKEND;
  const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', source], { cwd: HERE, env: childEnv, timeout: 60_000 });
  const lines = stdout.trim().split('\n');
  return { out: JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>, err: stderr };
}

test('tf-loading - the backend a process says it uses is the one its tensors run on', async (t) => {
  const { out, err } = await inProcess(`
    const { tf, tensorBackend, tensorBackendReason } = core;
    const y = tf.add(tf.ones([2]), tf.ones([2]));
    console.log(JSON.stringify({ backend: tensorBackend(), inUse: tf.getBackend(), reason: tensorBackendReason(), y: Array.from(y.dataSync()) }));
  `);
  t.true(['tensorflow', 'wasm'].includes(out.backend as string), `backend ${String(out.backend)}`);
  t.is(out.inUse, out.backend);
  t.deepEqual(out.y, [2, 2]);
  // Said once to stderr, with the reason.
  t.regex(err, new RegExp(`\\('${String(out.backend)}' backend\\)`));
  if (out.backend === 'wasm') t.regex(err, /@tensorflow\/tfjs-node is (not installed|.*did not load)/);
});

test('tf-loading - TENSORBUS_BACKEND=cpu forces the plain JavaScript backend and says why', async (t) => {
  const { out, err } = await inProcess(
    `console.log(JSON.stringify({ backend: core.tensorBackend(), inUse: core.tf.getBackend(), reason: core.tensorBackendReason() }));`,
    { TENSORBUS_BACKEND: 'cpu' },
  );
  t.is(out.backend, 'cpu');
  t.is(out.inUse, 'cpu');
  t.regex(out.reason as string, /TENSORBUS_BACKEND=cpu/);
  t.regex(err, /plain JavaScript \(slow\) \('cpu' backend\): TENSORBUS_BACKEND=cpu/);
});

test("tf-loading - a user's own import of @tensorflow/tfjs shares tensorbus's engine", async (t) => {
  const { out } = await inProcess(`
    const { tf } = core;
    const own = await import('@tensorflow/tfjs');
    const before = tf.memory().numTensors;
    const a = own.tensor1d([1, 2, 3]);
    const b = tf.mul(a, 2);
    const counted = tf.memory().numTensors - before;
    const same = own.engine() === tf.engine() && own.getBackend() === tf.getBackend() && b instanceof own.Tensor;
    const values = Array.from(await b.data());
    own.dispose([a, b]);
    console.log(JSON.stringify({ same, counted, values, left: tf.memory().numTensors - before }));
  `);
  t.true(out.same as boolean, 'one engine, one backend, one Tensor class');
  t.is(out.counted, 2, "a tensor made with the user's import counts in tensorbus's memory");
  t.deepEqual(out.values, [2, 4, 6]);
  t.is(out.left, 0);
});
