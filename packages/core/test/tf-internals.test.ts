/**
 * The assumptions src/tf-internals.ts makes about TensorFlow.js internals,
 * checked against the installed version on the backend in use. Each test is
 * one numbered assumption of that module; an upgrade of TensorFlow.js that
 * breaks one fails the test that names it.
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tensorBackend, tf } from '../src/index.js';
import {
  asInnerKernel,
  backendOfTensor,
  complexOnCpu,
  gradientDepth,
  hookEngine,
  keptClone,
  kernelDepth,
  readTensorSync,
  shareTensorData,
  tensorFromInfo,
  wasmHeapOf,
  withActiveTape,
  type TapeNode,
} from '../src/internal.js';

/** Runs `fn` and checks that it leaves as many tensors and data buffers as there were. */
function leavesNothing(t: { is(a: unknown, b: unknown, message?: string): void }, fn: () => void): void {
  const before = tf.memory();
  fn();
  const after = tf.memory();
  t.is(after.numTensors, before.numTensors, 'no tensor left behind');
  t.is(after.numDataBuffers, before.numDataBuffers, 'no data buffer left behind');
}

test.serial('tf internals - 1. engine.state.tensorInfo gives the backend that holds a tensor\'s data', (t) => {
  leavesNothing(t, () => {
    const x = tf.tensor([1, 2, 3]);
    t.is(backendOfTensor(x), tf.backend() as unknown, 'assumption 1: engine.state.tensorInfo.get(dataId).backend is the active backend for a tensor made on it');
    x.dispose();
  });
});

test.serial('tf internals - 2. engine.readSync gives a numeric tensor\'s values as its typed array, a string tensor\'s as byte strings', (t) => {
  leavesNothing(t, () => {
    const floats = tf.tensor([1.5, -2], [2], 'float32');
    const ints = tf.tensor([7, -8], [2], 'int32');
    const strings = tf.tensor(['ab', 'c'], [2], 'string');
    const f = readTensorSync(floats);
    t.true(f instanceof Float32Array, 'assumption 2: readSync of float32 is a Float32Array');
    t.deepEqual([...(f as Float32Array)], [1.5, -2]);
    const i = readTensorSync(ints);
    t.true(i instanceof Int32Array, 'assumption 2: readSync of int32 is an Int32Array');
    t.deepEqual([...(i as Int32Array)], [7, -8]);
    const s = readTensorSync(strings) as ArrayLike<Uint8Array | string>;
    const text = Array.from(s, (v) => (typeof v === 'string' ? v : new TextDecoder().decode(v)));
    t.deepEqual(text, ['ab', 'c'], 'assumption 2: readSync of a string tensor gives its elements as byte strings');
    tf.dispose([floats, ints, strings]);
  });
});

test.serial('tf internals - 3, 4. the WASM backend keeps bytes in wasm.HEAPU8 at dataIdMap\'s memoryOffset; makeOutput and makeTensorFromTensorInfo make a tensor the caller fills', (t) => {
  const heap = wasmHeapOf(tf.backend());
  if (tensorBackend() !== 'wasm') {
    t.is(heap, undefined, `the ${tensorBackend()} backend is not taken for a WASM heap`);
    return;
  }
  t.not(heap, undefined, 'assumption 3: the WASM backend has dataIdMap, wasm.HEAPU8 and makeOutput');
  leavesNothing(t, () => {
    const x = tf.tensor([1.5, 2.5, 3.5]);
    const offset = heap!.offsetOf(x.dataId);
    t.is(typeof offset, 'number', 'assumption 3: dataIdMap.get(dataId).memoryOffset is a number');
    const bytes = heap!.heap().slice(offset!, offset! + 12);
    t.deepEqual([...new Float32Array(bytes.buffer)], [1.5, 2.5, 3.5], 'assumption 3: a tensor\'s bytes lie in HEAPU8 at memoryOffset');
    x.dispose();

    const reserved = tensorFromInfo(heap!.allocate([2], 'int32'), heap!.backend);
    t.is(backendOfTensor(reserved), heap!.backend, 'assumption 4: makeTensorFromTensorInfo tracks the tensor on the given backend');
    const at = heap!.offsetOf(reserved.dataId)!;
    new Int32Array(heap!.heap().buffer, heap!.heap().byteOffset + at, 2).set([7, -8]);
    t.deepEqual([...reserved.dataSync()], [7, -8], 'assumptions 3, 4: memory from makeOutput, written in the heap, is the tensor\'s value');
    reserved.dispose();
  });
});

test.serial('tf internals - 4, 5. the CPU backend makes complex64 from makeTensorInfo and its Complex kernel, on any active backend', (t) => {
  leavesNothing(t, () => {
    const c = complexOnCpu(new Float32Array([1, 2]), new Float32Array([3, 4]), [2]);
    t.not(c, undefined, 'assumption 5: the CPU backend and its Complex kernel are registered');
    t.is(c!.dtype, 'complex64');
    t.is(backendOfTensor(c!), tf.engine().findBackend('cpu') as unknown, 'assumption 4: the tensor is tracked on the CPU backend');
    t.deepEqual([...c!.dataSync()], [1, 3, 2, 4], 'assumption 5: the tensor reads back as interleaved (re, im)');
    c!.dispose();
  });
});

test.serial('tf internals - 6. the engine calls isTapeOn, addTapeNode, saveTensorsForBackwardMode and trackTensor on itself, so hooks see every op', (t) => {
  const seen = { isTapeOn: 0, addTapeNode: [] as string[], saveTensorsForBackwardMode: 0, trackTensor: new Set<tf.Tensor>() };
  const unhooks = [
    hookEngine('isTapeOn', (original) => () => {
      seen.isTapeOn++;
      return original();
    }),
    hookEngine('addTapeNode', (original) => (kernelName, ...rest) => {
      seen.addTapeNode.push(kernelName);
      original(kernelName, ...rest);
    }),
    hookEngine('saveTensorsForBackwardMode', (original) => (tensors) => {
      seen.saveTensorsForBackwardMode++;
      return original(tensors);
    }),
    hookEngine('trackTensor', (original) => (tensor, backend) => {
      seen.trackTensor.add(tensor);
      original(tensor, backend);
    }),
  ];
  const x = tf.scalar(3);
  let y: tf.Tensor | undefined;
  const dx = tf.grad((v: tf.Tensor) => (y = tf.keep(tf.mul(v, v))))(x);
  for (const unhook of unhooks.reverse()) unhook();
  t.is(dx.dataSync()[0], 6, 'the hooked engine still computes gradients');
  t.true(seen.isTapeOn > 0, 'assumption 6: ops ask this.isTapeOn()');
  t.true(seen.addTapeNode.includes('Multiply'), 'assumption 6: ops under tf.grad call this.addTapeNode(kernelName, …)');
  t.true(seen.saveTensorsForBackwardMode > 0, 'assumption 6: ops under tf.grad call this.saveTensorsForBackwardMode');
  t.true(seen.trackTensor.has(y!), 'assumption 6: each tensor made passes through this.trackTensor');
  const calls = seen.isTapeOn;
  tf.dispose(tf.mul(x, x));
  t.is(seen.isTapeOn, calls, 'unhooking puts the engine\'s own method back');
  tf.dispose([x, y!, dx]);
});

test.serial('tf internals - 7. gradientDepth is above 0 inside tf.grad, kernelDepth while a kernel runs, and addTapeNode pushes the node it builds on activeTape', (t) => {
  t.is(gradientDepth(), 0, 'assumption 7: gradientDepth is 0 outside tf.grad');
  t.is(kernelDepth(), 0, 'assumption 7: kernelDepth is 0 outside kernels');
  t.is(asInnerKernel(() => kernelDepth()), 1);
  t.is(kernelDepth(), 0);

  // kernelDepth while a kernel runs: a kernel of our own, registered on the active backend for this test.
  const backendName = tf.getBackend();
  const identity = tf.getKernel('Identity', backendName)!;
  let depthInKernel = -1;
  tf.registerKernel({
    kernelName: 'TensorbusProbe',
    backendName,
    kernelFunc: (args) => {
      depthInKernel = kernelDepth();
      return identity.kernelFunc(args);
    },
  });
  try {
    tf.dispose(tf.engine().runKernel('TensorbusProbe', { x: tf.scalar(1) }, {}) as tf.Tensor);
  } finally {
    tf.unregisterKernel('TensorbusProbe', backendName);
  }
  t.true(depthInKernel > 0, 'assumption 7: kernelDepth is above 0 while a kernel runs');

  const nodes: TapeNode[] = [];
  let depthInGrad = 0;
  let gradientValues: number[] = [];
  const unhook = hookEngine('addTapeNode', (original) => (kernelName, inputs, outputs, gradientsFunc, saved, attrs) => {
    depthInGrad = gradientDepth();
    const scratch: TapeNode[] = [];
    withActiveTape(scratch, () => original(kernelName, inputs, outputs, gradientsFunc, saved, attrs));
    nodes.push(...scratch);
    const node = scratch[0];
    if (node?.kernelName === 'Multiply' && node.gradient) {
      // Evaluated now (tf.grad disposes the saved tensors when it ends), recording nothing.
      gradientValues = asInnerKernel(() => {
        const grads = node.gradient!([tf.onesLike(outputs[0]!)]);
        return Object.keys(grads).sort().map((key) => {
          const g = grads[key]!();
          const value = g.dataSync()[0]!;
          g.dispose();
          return value;
        });
      });
    }
    original(kernelName, inputs, outputs, gradientsFunc, saved, attrs);
  });
  const x = tf.scalar(3);
  const dx = tf.grad((v: tf.Tensor) => tf.mul(v, v))(x);
  unhook();
  t.true(depthInGrad > 0, 'assumption 7: gradientDepth is above 0 inside tf.grad');
  t.is(dx.dataSync()[0], 6, 'tf.grad\'s own tape is untouched by the swap');
  const mul = nodes.find((n) => n.kernelName === 'Multiply');
  t.not(mul, undefined, 'assumption 7: addTapeNode pushes its node on state.activeTape');
  t.is(typeof mul!.gradient, 'function', 'assumption 7: the node carries gradient(dys), as tape.ts reads it');
  t.is(mul!.outputs.length, 1);
  t.deepEqual(Object.keys(mul!.inputs).sort(), ['a', 'b']);
  t.deepEqual(gradientValues, [3, 3], 'the node\'s gradient gives d(v*v)/da = d(v*v)/db = v');
  tf.dispose([x, dx]);
});

test.serial('tf internals - 8. makeTensorFromDataId with backend.incRef gives a second tensor on the same data that outlives the first', (t) => {
  leavesNothing(t, () => {
    const x = tf.tensor([1, 2, 3]);
    const shared = shareTensorData(x);
    t.is(shared.dataId, x.dataId, 'assumption 8: the share is on the same data (no copy)');
    t.true(shared.kept);
    x.dispose();
    t.deepEqual([...shared.dataSync()], [1, 2, 3], 'assumption 8: backend.incRef keeps the data alive after the first tensor is disposed');
    shared.dispose();
  });
});

test.serial('tf internals - 9. engine.clone copies a tensor under tf.grad, and the kept copy outlives the gradient computation', (t) => {
  leavesNothing(t, () => {
    const x = tf.tensor([4, 5]);
    let copy: tf.Tensor | undefined;
    const dx = tf.grad((v: tf.Tensor) => {
      copy = keptClone(v);
      return tf.sum(tf.mul(v, v));
    })(x);
    t.deepEqual([...dx.dataSync()], [8, 10], 'the copy changes nothing in the gradient');
    x.dispose();
    t.false(copy!.isDisposed, 'a kept clone survives the tf.grad it was made in');
    t.deepEqual([...copy!.dataSync()], [4, 5], 'assumption 9: engine.clone(x) has x\'s values');
    tf.dispose([copy!, dx]);
  });
});

/** What reaching TensorFlow.js internals looks like in source: the engine itself, its state, backends' private members. */
const INTERNALS = [
  /\btf\.engine\(\)/,
  /\bENGINE\b/,
  /\.state\.(?:tensorInfo|activeTape|gradientDepth|kernelDepth|numTensors)\b/,
  /\.(?:dataIdMap|HEAPU8|memoryOffset|makeOutput|makeTensorInfo|makeTensorFromTensorInfo|makeTensorFromDataId|disposeIntermediateTensorInfo|saveTensorsForBackwardMode|addTapeNode|trackTensor|isTapeOn|readSync|incRef)\b/,
  /\bfindBackend\(/,
];

test('tf internals - no source file of any package but tf-internals.ts reaches TensorFlow.js internals', (t) => {
  const packages = fileURLToPath(new URL('../../../', import.meta.url));
  const offenders: string[] = [];
  for (const pkg of readdirSync(packages)) {
    let entries;
    try {
      entries = readdirSync(join(packages, pkg, 'src'), { withFileTypes: true, recursive: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const file = join(entry.parentPath ?? entry.path, entry.name);
      if (file.endsWith(join('core', 'src', 'tf-internals.ts'))) continue;
      const lines = readFileSync(file, 'utf8').split('\n');
      lines.forEach((line, i) => {
        const code = line.replace(/\/\/.*$/, '').replace(/^\s*\*.*$/, '');
        if (INTERNALS.some((pattern) => pattern.test(code))) offenders.push(`${file.slice(packages.length)}:${i + 1}: ${line.trim()}`);
      });
    }
  }
  t.deepEqual(offenders, []);
});
