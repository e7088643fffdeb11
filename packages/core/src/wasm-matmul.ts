/**
 * A fast path for transposed matrix products on the WebAssembly backend.
 *
 * tfjs-backend-wasm 4.x hands `matMul(a, b, transposeA, transposeB)` with a
 * transpose flag set to a naive loop instead of XNNPACK: on this project's
 * 2-core machine, [128, 512] x [512, 512]^T takes ~180 ms against ~2.5 ms
 * untransposed. Every gradient of a matrix product uses those flags
 * (dA = dy b^T, dB = a^T dy), so training a dense network spent almost all
 * its time there. Transposing the operand explicitly (a fast kernel) and then
 * multiplying untransposed gives the same values 10 to 70 times faster at
 * such sizes.
 *
 * {@link speedUpWasmTransposedMatMul} re-registers the backend's `BatchMatMul`
 * and `_FusedMatMul` kernels with that detour; the gradients, which are keyed
 * by kernel name and see the original attributes, are unchanged.
 * @module
 */
import type * as TfNamespace from '@tensorflow/tfjs';

type Tf = typeof TfNamespace;
type KernelConfig = NonNullable<ReturnType<Tf['getKernel']>>;
type KernelFunc = KernelConfig['kernelFunc'];
type TensorInfo = { dataId: object; shape: number[]; dtype: string };
interface Backend {
  disposeData(dataId: object): boolean;
}

const KERNELS = ['BatchMatMul', '_FusedMatMul'];
const patched = new WeakSet<object>();

/** `x` with its last two dimensions swapped, by the backend's Transpose kernel. */
function swapLastTwo(transpose: KernelFunc, x: TensorInfo, backend: unknown): TensorInfo {
  const perm = x.shape.map((_, i) => i);
  const rank = perm.length;
  [perm[rank - 2], perm[rank - 1]] = [perm[rank - 1]!, perm[rank - 2]!];
  return transpose({ inputs: { x }, backend, attrs: { perm } } as never) as unknown as TensorInfo;
}

/** Wraps a matrix-product kernel so that transposed operands are transposed first. */
function withExplicitTranspose(original: KernelFunc, transpose: KernelFunc): KernelFunc {
  return ((args: { inputs: Record<string, TensorInfo>; backend: Backend; attrs: Record<string, unknown> }) => {
    const { inputs, backend, attrs } = args;
    if (!attrs.transposeA && !attrs.transposeB) return original(args as never);
    const temporaries: TensorInfo[] = [];
    const flip = (x: TensorInfo) => {
      const t = swapLastTwo(transpose, x, backend);
      temporaries.push(t);
      return t;
    };
    try {
      return original({
        inputs: { ...inputs, a: attrs.transposeA ? flip(inputs.a!) : inputs.a, b: attrs.transposeB ? flip(inputs.b!) : inputs.b },
        backend,
        attrs: { ...attrs, transposeA: false, transposeB: false },
      } as never);
    } finally {
      for (const t of temporaries) backend.disposeData(t.dataId);
    }
  }) as unknown as KernelFunc;
}

/**
 * Makes transposed matrix products on the `wasm` backend go through an
 * explicit transpose. Idempotent; does nothing when the backend lacks one of
 * the kernels involved.
 */
export function speedUpWasmTransposedMatMul(tfjs: Tf): void {
  const transpose = tfjs.getKernel('Transpose', 'wasm');
  if (!transpose) return;
  for (const name of KERNELS) {
    const kernel = tfjs.getKernel(name, 'wasm');
    if (!kernel || patched.has(kernel)) continue;
    const replacement: KernelConfig = { ...kernel, kernelFunc: withExplicitTranspose(kernel.kernelFunc, transpose.kernelFunc) };
    patched.add(replacement);
    tfjs.unregisterKernel(name, 'wasm');
    tfjs.registerKernel(replacement);
  }
}
