/**
 * TensorFlow.js ops as builtins: `rpcSync('w1', tf.add, [a, b])` sends the
 * name `tf.add`, and the callee runs its own `tf.add`. Only the ops listed
 * here are callable: pure computations that take tensors (or shapes and
 * values) and return new tensors. Nothing that creates state outliving the
 * call (`tf.variable`: one leaked, named Variable per call), writes to the
 * worker's output (`tf.print`), frees or keeps memory (`dispose`, `keep`,
 * `tidy`), changes the backend, kernels, flags or registries, loads models,
 * reads files or the network (`io`, `data`), or takes callbacks. A name not
 * in the list is an unknown function, whatever the installed tfjs exports.
 * @module
 */
import { tf } from '@tensorbus/core';

/** The tf ops callable by name from the wire. */
const ALLOWED = new Set([
  'abs', 'acos', 'acosh', 'add', 'addN', 'all', 'any', 'argMax', 'argMin', 'asin', 'asinh', 'atan', 'atan2', 'atanh',
  'avgPool', 'avgPool3d', 'basicLSTMCell', 'batchNorm', 'batchNorm2d', 'batchNorm3d', 'batchNorm4d', 'batchToSpaceND',
  'bincount', 'bitwiseAnd', 'broadcastArgs', 'broadcastTo', 'cast', 'ceil', 'clipByValue', 'clone', 'complex',
  'concat', 'concat1d', 'concat2d', 'concat3d', 'concat4d', 'conv1d', 'conv2d', 'conv2dTranspose', 'conv3d',
  'conv3dTranspose', 'cos', 'cosh', 'cosineWindow', 'cumprod', 'cumsum', 'denseBincount', 'depthToSpace',
  'depthwiseConv2d', 'diag', 'dilation2d', 'div', 'divNoNan', 'dot', 'dropout', 'einsum', 'elu', 'ensureShape', 'equal',
  'erf', 'euclideanNorm', 'exp', 'expandDims', 'expm1', 'eye', 'fft', 'fill', 'floor', 'floorDiv', 'gather', 'gatherND',
  'greater', 'greaterEqual', 'ifft', 'imag', 'irfft', 'isFinite', 'isInf', 'isNaN', 'leakyRelu', 'less', 'lessEqual',
  'linspace', 'localResponseNormalization', 'log', 'log1p', 'logSigmoid', 'logSoftmax', 'logSumExp', 'logicalAnd',
  'logicalNot', 'logicalOr', 'logicalXor', 'lowerBound', 'matMul', 'max', 'maxPool', 'maxPool3d', 'maxPoolWithArgmax',
  'maximum', 'mean', 'meshgrid', 'min', 'minimum', 'mirrorPad', 'mod', 'moments', 'multiRNNCell', 'multinomial', 'mul',
  'neg', 'norm', 'notEqual', 'oneHot', 'ones', 'onesLike', 'outerProduct', 'pad', 'pad1d', 'pad2d', 'pad3d', 'pad4d',
  'pool', 'pow', 'prelu', 'prod', 'raggedGather', 'raggedRange', 'raggedTensorToTensor', 'rand', 'randomGamma',
  'randomNormal', 'randomStandardNormal', 'randomUniform', 'randomUniformInt', 'range', 'real', 'reciprocal', 'relu',
  'relu6', 'reshape', 'reverse', 'reverse1d', 'reverse2d', 'reverse3d', 'reverse4d', 'rfft', 'round', 'rsqrt', 'scalar',
  'scatterND', 'searchSorted', 'selu', 'separableConv2d', 'sigmoid', 'sign', 'sin', 'sinh', 'slice', 'slice1d',
  'slice2d', 'slice3d', 'slice4d', 'softmax', 'softplus', 'spaceToBatchND', 'sparseToDense', 'split', 'sqrt', 'square',
  'squaredDifference', 'squeeze', 'stack', 'step', 'stridedSlice', 'sub', 'sum', 'tan', 'tanh', 'tensor', 'tensor1d',
  'tensor2d', 'tensor3d', 'tensor4d', 'tensor5d', 'tensor6d', 'tensorScatterUpdate', 'tile', 'topk', 'transpose',
  'truncatedNormal', 'unique', 'unsortedSegmentSum', 'unstack', 'upperBound', 'where', 'zeros', 'zerosLike',
]);

let byFunction: Map<unknown, string> | undefined;

function table(): Map<unknown, string> {
  if (!byFunction) {
    byFunction = new Map();
    for (const key of ALLOWED) {
      const value = (tf as unknown as Record<string, unknown>)[key];
      if (typeof value === 'function') byFunction.set(value, `tf.${key}`);
    }
  }
  return byFunction;
}

/** `tf.<op>` for an allowed TensorFlow.js op function, else undefined. */
export function tfOpName(fn: unknown): string | undefined {
  return table().get(fn);
}

/** The op function for `tf.<op>` when the op is allowed, else undefined. */
export function tfOpByName(name: string): ((...args: unknown[]) => unknown) | undefined {
  if (!name.startsWith('tf.')) return undefined;
  const key = name.slice(3);
  if (!ALLOWED.has(key)) return undefined;
  const value = (tf as unknown as Record<string, unknown>)[key];
  return typeof value === 'function' ? (value as (...args: unknown[]) => unknown) : undefined;
}

/** The names (`tf.<op>`) of the ops callable from the wire that this process's tfjs has, sorted. */
export function tfOpNames(): string[] {
  return [...ALLOWED].filter((key) => typeof (tf as unknown as Record<string, unknown>)[key] === 'function').map((key) => `tf.${key}`).sort();
}
