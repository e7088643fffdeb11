/**
 * Transposed matrix products on the backend in use (WASM here, where they
 * take the explicit-transpose path): values equal a plain JavaScript product
 * for every combination of flags, batched and fused too; gradients through
 * them are unchanged; and on WASM a transposed product costs about what an
 * untransposed one does.
 */
import test from 'ava';
import { tf, tensorBackend } from '../src/index.js';

type Matrix = number[][];

function transposeOf(m: Matrix): Matrix {
  return m[0]!.map((_, j) => m.map((row) => row[j]!));
}

function product(a: Matrix, b: Matrix): Matrix {
  return a.map((row) => b[0]!.map((_, j) => row.reduce((sum, v, k) => sum + v * b[k]![j]!, 0)));
}

function closeTo(actual: number[], expected: number[], tolerance = 1e-4): boolean {
  return actual.length === expected.length && actual.every((v, i) => Math.abs(v - expected[i]!) <= tolerance * (1 + Math.abs(expected[i]!)));
}

const A: Matrix = [[1, -2, 3], [0.5, 4, -1]]; // 2 x 3
const B: Matrix = [[2, 1], [-1, 0.5], [3, -2]]; // 3 x 2
const expected = product(A, B).flat();

// Serial: the memory counts are per process.
for (const [transposeA, transposeB] of [[false, false], [true, false], [false, true], [true, true]] as const) {
  test.serial(`wasm-matmul - matMul with transposeA=${transposeA} transposeB=${transposeB} equals the plain product`, async (t) => {
    const a = tf.tensor2d(transposeA ? transposeOf(A) : A);
    const b = tf.tensor2d(transposeB ? transposeOf(B) : B);
    const before = tf.memory() as { numTensors: number; numDataBuffers: number };
    const y = tf.matMul(a, b, transposeA, transposeB);
    t.deepEqual(y.shape, [2, 2]);
    t.true(closeTo(Array.from(await y.data()), expected), `got ${await y.data()}`);
    y.dispose();
    const after = tf.memory() as { numTensors: number; numDataBuffers: number };
    t.is(after.numTensors, before.numTensors, 'no tensor is left behind');
    t.is(after.numDataBuffers, before.numDataBuffers, 'no temporary buffer is left behind');
    tf.dispose([a, b]);
  });
}

test('wasm-matmul - batched transposed products equal per-matrix products', async (t) => {
  const a = tf.tensor3d([transposeOf(A), transposeOf(A.map((r) => r.map((v) => -v)))]); // [2, 3, 2]
  const b = tf.tensor3d([transposeOf(B), transposeOf(B)]); // [2, 2, 3]
  const y = tf.matMul(a, b, true, true);
  t.deepEqual(y.shape, [2, 2, 2]);
  t.true(closeTo(Array.from(await y.data()), [...expected, ...expected.map((v) => -v)]));
  tf.dispose([a, b, y]);
});

test('wasm-matmul - fused matMul with bias and relu, transposed, equals the plain product', async (t) => {
  const a = tf.tensor2d(transposeOf(A));
  const b = tf.tensor2d(transposeOf(B));
  const bias = tf.tensor1d([0.5, -1]);
  const y = tf.fused.matMul({ a, b, transposeA: true, transposeB: true, bias, activation: 'relu' });
  const want = product(A, B).map((row) => row.map((v, j) => Math.max(0, v + [0.5, -1][j]!))).flat();
  t.true(closeTo(Array.from(await y.data()), want), `got ${await y.data()}`);
  tf.dispose([a, b, bias, y]);
});

test('wasm-matmul - gradients of a matrix product are the transposed products', async (t) => {
  const a = tf.tensor2d(A);
  const b = tf.tensor2d(B);
  const [da, db] = tf.grads((x: tf.Tensor, w: tf.Tensor) => tf.sum(tf.matMul(x, w)))([a, b]);
  // d sum(AB) / dA = 1 B^T, d sum(AB) / dB = A^T 1.
  const ones = (rows: number, cols: number): Matrix => Array.from({ length: rows }, () => Array<number>(cols).fill(1));
  t.true(closeTo(Array.from(await da!.data()), product(ones(2, 2), transposeOf(B)).flat()));
  t.true(closeTo(Array.from(await db!.data()), product(transposeOf(A), ones(2, 2)).flat()));
  tf.dispose([a, b, da!, db!]);
});

test('wasm-matmul - on WASM a transposed product costs about what an untransposed one does', async (t) => {
  const a = tf.randomUniform([128, 512], -1, 1, 'float32', 1);
  const w = tf.randomUniform([512, 512], -1, 1, 'float32', 2);
  const dy = tf.randomUniform([128, 512], -1, 1, 'float32', 3);
  const median = (run: () => tf.Tensor) => {
    const times: number[] = [];
    for (let i = 0; i < 7; i++) {
      const started = performance.now();
      const y = run();
      y.dataSync();
      times.push(performance.now() - started);
      y.dispose();
    }
    return times.sort((x, y) => x - y)[3]!;
  };
  const plain = median(() => tf.matMul(a, w));
  const transposedB = median(() => tf.matMul(dy, w, false, true));
  const transposedA = median(() => tf.matMul(a, dy, true, false));
  t.log(`${tensorBackend()}: a w ${plain.toFixed(2)} ms, dy w^T ${transposedB.toFixed(2)} ms, a^T dy ${transposedA.toFixed(2)} ms`);
  if (tensorBackend() === 'wasm') {
    // Without the explicit transpose, both take 60 to 70 times as long as the plain product at this size.
    t.true(transposedB < 10 * plain + 10, `dy w^T took ${transposedB} ms against ${plain} ms`);
    t.true(transposedA < 10 * plain + 10, `a^T dy took ${transposedA} ms against ${plain} ms`);
  } else {
    t.pass(`the ${tensorBackend()} backend needs no fast path`);
  }
  tf.dispose([a, w, dy]);
});
