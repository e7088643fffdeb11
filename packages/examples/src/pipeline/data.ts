/**
 * A learnable synthetic image task for the pipeline example, in place of the
 * tutorial's random ResNet inputs: each of `classes` classes has a prototype
 * (a few soft blobs on a `size` x `size` grey image, drawn from a seed); a
 * sample is its class's prototype shifted by up to `maxShift` pixels, with a
 * random contrast and per-pixel noise, quantised to 8-bit pixel values.
 * Every process that builds the task with the same seed gets the same images.
 * @module
 */
import { seededRandom } from '../common/random.js';

/** One soft blob of a prototype: centre, radius and brightness. */
interface Blob {
  x: number;
  y: number;
  radius: number;
  brightness: number;
}

/** A batch: `count` images as row-major pixel values 0..255, and their labels. */
export interface ImageBatch {
  count: number;
  /** count * size * size values in 0..255. */
  pixels: Int32Array;
  labels: Int32Array;
}

/** How the task is drawn. */
export interface TaskOptions {
  /** Side of the square images. */
  size: number;
  classes: number;
  /** Largest shift of a sample off its prototype, in pixels, each way. */
  maxShift: number;
  /** Standard deviation of the pixel noise (pixels are in [0, 1] before quantisation). */
  noise: number;
  seed: number;
}

/** The defaults: 10 classes of 24 x 24 images. */
export const DEFAULT_TASK: TaskOptions = { size: 24, classes: 10, maxShift: 3, noise: 0.35, seed: 2020 };

/** A standard normal draw (Box–Muller). */
function gaussian(random: () => number): number {
  const u = 1 - random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** The classes' prototypes and a sampler of labelled images. */
export class SyntheticImages {
  readonly pixelsPerImage: number;
  private readonly prototypes: Blob[][];

  constructor(readonly options: TaskOptions = DEFAULT_TASK) {
    this.pixelsPerImage = options.size * options.size;
    const random = seededRandom(options.seed);
    const s = options.size;
    this.prototypes = Array.from({ length: options.classes }, () =>
      Array.from({ length: 3 }, () => ({
        x: s * (0.2 + 0.6 * random()),
        y: s * (0.2 + 0.6 * random()),
        radius: s * (0.08 + 0.12 * random()),
        brightness: 0.5 + 0.5 * random(),
      })),
    );
  }

  /** A seeded generator of batches: the same seed gives the same sequence. */
  sampler(seed: number): (count: number) => ImageBatch {
    const random = seededRandom(seed);
    return (count) => this.draw(count, random);
  }

  private draw(count: number, random: () => number): ImageBatch {
    const { size, classes, maxShift, noise } = this.options;
    const pixels = new Int32Array(count * this.pixelsPerImage);
    const labels = new Int32Array(count);
    for (let n = 0; n < count; n++) {
      const label = Math.floor(random() * classes);
      labels[n] = label;
      const dx = (2 * random() - 1) * maxShift;
      const dy = (2 * random() - 1) * maxShift;
      const contrast = 0.7 + 0.6 * random();
      const base = n * this.pixelsPerImage;
      for (let y = 0; y < size; y++) {
        for (let x = 0; x < size; x++) {
          let v = 0;
          for (const b of this.prototypes[label]!) {
            const d2 = (x - b.x - dx) ** 2 + (y - b.y - dy) ** 2;
            v += b.brightness * Math.exp(-d2 / (2 * b.radius * b.radius));
          }
          const value = contrast * Math.min(1, v) + noise * gaussian(random);
          pixels[base + y * size + x] = Math.round(255 * Math.min(1, Math.max(0, value)));
        }
      }
    }
    return { count, pixels, labels };
  }
}
